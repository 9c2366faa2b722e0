from datetime import datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Q

from kitsune.questions.models import Answer
from kitsune.sumo.email_utils import make_mail, send_messages
from kitsune.users.models import Profile


@shared_task
def send_welcome_emails():
    """Send a welcome email to first time contributors."""
    wait_period = datetime.now() - timedelta(hours=24)
    answer_filter = Q(created__range=(datetime.min, wait_period))
    answer_filter &= Q(creator__profile__first_answer_email_sent=False)
    recipient_ids = set(Answer.objects.filter(answer_filter).values_list("creator", flat=True))

    messages = []
    for user in User.objects.filter(id__in=recipient_ids):
        messages.append(
            make_mail(
                subject="Congrats on your first forum reply!",
                text_template="community/email/first_answer.ltxt",
                context_vars={"user": user},
                from_email=settings.TIDINGS_FROM_ADDRESS,
                to_email=user.email,
            )
        )

    send_messages(messages)
    Profile.objects.filter(user__id__in=recipient_ids).update(first_answer_email_sent=True)
