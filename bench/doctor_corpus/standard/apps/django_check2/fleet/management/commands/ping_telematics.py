import requests
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Check the telematics provider answers before a deploy"

    def handle(self, *args, **options):
        answer = requests.get("https://telematics.example/health", timeout=(2, 3))
        if answer.status_code != 200:
            raise CommandError(f"telematics is down: {answer.status_code}")
        self.stdout.write("telematics ok")
