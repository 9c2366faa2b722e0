import logging

from django.core.management.base import BaseCommand

from datahub.company.models import Advisor
from datahub.core.sso import SSORequestError, SSOUserDoesNotExistError, get_user_by_email

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Update SSO user ID for each adviser"

    def add_arguments(self, parser):
        parser.add_argument("--simulate", action="store_true")

    def handle(self, *args, **options):
        queryset = Advisor.objects.filter(is_active=True, sso_user_id__isnull=True)
        for adviser in queryset.iterator():
            try:
                sso_user_data = get_user_by_email(adviser.email)
            except (SSOUserDoesNotExistError, SSORequestError):
                logger.warning(f"No SSO user for adviser ID {adviser.pk}")
                continue
            adviser.sso_user_id = sso_user_data["user_id"]
            if not options["simulate"]:
                adviser.save(update_fields=("sso_user_id",))
