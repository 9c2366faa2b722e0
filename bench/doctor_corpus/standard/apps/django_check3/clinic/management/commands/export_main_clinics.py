from django.core.management.base import BaseCommand

from clinic.models import Clinic

MAIN_CLINICS = (1, 2, 5)


class Command(BaseCommand):
    def handle(self, *args, **options):
        for clinic_id in MAIN_CLINICS:
            export = Clinic.objects.get(pk=clinic_id).start_invoice_export()
            self.stdout.write(f"clinic {clinic_id}: export {export.pk} started")
