from django.contrib.sessions.models import Session
from django.core.management.base import BaseCommand
from django.utils import timezone


class Command(BaseCommand):
    def handle(self, *args, **options):
        deleted, _ = Session.objects.filter(expire_date__lt=timezone.now()).delete()
        self.stdout.write(f"{deleted} sessions purged")
