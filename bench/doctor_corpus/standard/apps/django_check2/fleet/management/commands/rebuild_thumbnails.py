from django.core.management.base import BaseCommand

from fleet.models import Photo


class Command(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("--tenant", type=int)

    def handle(self, *args, **options):
        photos = Photo.objects.only("id", "key")
        if options["tenant"]:
            photos = photos.filter(trip__tenant_id=options["tenant"])
        for n, photo in enumerate(photos, start=1):
            photo.make_thumbnail()
            if n % 100 == 0:
                self.stdout.write(f"{n} thumbnails")
