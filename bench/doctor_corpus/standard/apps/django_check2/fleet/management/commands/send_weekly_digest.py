from django.core.mail import send_mail
from django.core.management.base import BaseCommand
from django.db.models import Sum
from django.utils import timezone

from fleet.models import Driver


class Command(BaseCommand):
    help = "Mail every active driver the distance they drove this week"

    def handle(self, *args, **options):
        since = timezone.now() - timezone.timedelta(days=7)
        for driver in Driver.objects.filter(active=True).iterator(chunk_size=500):
            meters = driver.trips.filter(started_at__gte=since).aggregate(m=Sum("distance_m"))["m"] or 0
            send_mail("Your week", f"You drove {meters / 1000:.0f} km.", "fleet@example.com", [driver.email])
