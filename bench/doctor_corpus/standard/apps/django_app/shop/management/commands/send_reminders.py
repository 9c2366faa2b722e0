from django.core.mail import send_mail
from django.core.management.base import BaseCommand

from shop.models import Customer


class Command(BaseCommand):
    help = "Remind every customer with an unpaid order"

    def handle(self, *args, **options):
        for customer in Customer.objects.filter(order__status="unpaid").distinct().iterator():
            send_mail("Unpaid order", "Please pay.", None, [customer.email])
