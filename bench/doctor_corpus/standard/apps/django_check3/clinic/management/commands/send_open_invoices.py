from django.core.management.base import BaseCommand

from clinic.models import Invoice


class Command(BaseCommand):
    help = "Mail every open invoice to its patient"

    def handle(self, *args, **options):
        sent = 0
        for invoice in Invoice.objects.filter(status="open").select_related("patient").iterator():
            invoice.send_pdf()
            sent += 1
        self.stdout.write(f"sent {sent} invoices")
