from django.core.management.base import BaseCommand

from shop.models import Order


class Command(BaseCommand):
    help = "Recompute every order's total"

    def handle(self, *args, **options):
        for order in Order.objects.all():
            order.recompute_total()
            order.save(update_fields=["total"])
