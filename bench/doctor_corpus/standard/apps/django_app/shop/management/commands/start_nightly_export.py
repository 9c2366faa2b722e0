from django.core.management.base import BaseCommand

from shop.models import Project


class Command(BaseCommand):
    help = "Start the nightly export of one project"

    def add_arguments(self, parser):
        parser.add_argument("project_id", type=int)

    def handle(self, *args, **options):
        export = Project.objects.get(pk=options["project_id"]).start_order_export()
        self.stdout.write(f"export {export.pk} started")
