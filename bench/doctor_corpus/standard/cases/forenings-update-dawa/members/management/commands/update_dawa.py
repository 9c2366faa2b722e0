from django.core.management.base import BaseCommand
from members.models import Address
from tqdm import tqdm


class Command(BaseCommand):
    help = "Updates every address from DAWA"

    def handle(self, *args, **options):
        for address in tqdm(Address.objects.all(), desc="Updating address"):
            address.save()
