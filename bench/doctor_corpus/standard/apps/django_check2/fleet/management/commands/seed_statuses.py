from django.core.management.base import BaseCommand

from fleet.models import Status


class Command(BaseCommand):
    def handle(self, *args, **options):
        for code in ["ok", "warning", "fault", "offline"]:
            Status.objects.get_or_create(code=code)
