from django.core.management.base import BaseCommand

from fleet.models import Tenant


class Command(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("tenant", type=int)

    def handle(self, *args, **options):
        export = Tenant.objects.get(pk=options["tenant"]).start_trip_export()
        self.stdout.write(f"export {export.pk} started")
