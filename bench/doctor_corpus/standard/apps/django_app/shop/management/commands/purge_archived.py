from django.core.management.base import BaseCommand

from shop.models import Order


class Command(BaseCommand):
    help = "Delete archived orders"

    def handle(self, *args, **options):
        deleted, _ = Order.objects.filter(archived=True).delete()
        self.stdout.write(f"{deleted} deleted")
