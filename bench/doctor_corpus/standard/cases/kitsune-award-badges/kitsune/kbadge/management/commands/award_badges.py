from datetime import date

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand

from kitsune.wiki import badges as wiki_badges
from kitsune.wiki.models import Revision
from kitsune.wiki.tasks import maybe_award_badge


class Command(BaseCommand):
    help = "Award yearly badges for years 2010-2013."

    def handle(self, *arg, **kwargs):
        for year in [2010, 2011, 2012, 2013]:
            user_ids = (
                Revision.objects.filter(
                    document__locale=settings.WIKI_DEFAULT_LANGUAGE,
                    created__gte=date(year, 1, 1),
                    created__lt=date(year + 1, 1, 1),
                )
                .values_list("creator_id", flat=True)
                .distinct()
            )
            for user in User.objects.filter(id__in=user_ids):
                if maybe_award_badge(wiki_badges.WIKI_BADGES["kb-badge"], year, user.id):
                    print(f"{year} KB Badge awarded to {user.username}")
