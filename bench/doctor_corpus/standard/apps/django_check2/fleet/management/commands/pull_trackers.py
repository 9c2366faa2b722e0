from django.core.management.base import BaseCommand

from fleet.models import Vehicle
from fleet.services import pull_tracker


class Command(BaseCommand):
    help = "Refresh every tracked vehicle's status from the telematics provider"

    def handle(self, *args, **options):
        statuses = [pull_tracker(vehicle) for vehicle in Vehicle.objects.exclude(tracker_id=None)]
        self.stdout.write(f"{len(statuses)} trackers refreshed")
