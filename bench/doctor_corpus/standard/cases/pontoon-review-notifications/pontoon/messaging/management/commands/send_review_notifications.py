from collections import defaultdict
from datetime import timedelta

from django.core.management.base import BaseCommand
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone
from notifications.signals import notify

from pontoon.base.models import Translation


class Command(BaseCommand):
    help = "Notify contributors about newly reviewed suggestions"

    def handle(self, *args, **options):
        data = defaultdict(lambda: defaultdict(lambda: ([], [])))
        start = timezone.now() - timedelta(days=1)

        for suggestion in Translation.objects.filter(
            (Q(approved_date__gt=start) | Q(rejected_date__gt=start))
            & Q(user__profile__review_notifications=True)
        ):
            approved, rejected = data[suggestion.user][suggestion.locale]
            if suggestion.approved:
                approved.append(suggestion.entity.pk)
            elif suggestion.rejected:
                rejected.append(suggestion.entity.pk)

        for author, notification_data in data.items():
            description = render_to_string(
                "messaging/notifications/suggestions_reviewed.html",
                {"notifications": notification_data},
            )
            notify.send(
                sender=author,
                recipient=author,
                verb="has reviewed suggestions",
                description=description,
            )
