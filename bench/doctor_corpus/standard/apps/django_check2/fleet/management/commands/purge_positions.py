from django.core.management.base import BaseCommand
from django.utils import timezone

from fleet.models import Position


class Command(BaseCommand):
    help = "Delete GPS positions older than the retention period"

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=365)

    def handle(self, *args, **options):
        cutoff = timezone.now() - timezone.timedelta(days=options["days"])
        deleted, _ = Position.objects.filter(recorded_at__lt=cutoff).delete()
        self.stdout.write(f"{deleted} positions deleted")
