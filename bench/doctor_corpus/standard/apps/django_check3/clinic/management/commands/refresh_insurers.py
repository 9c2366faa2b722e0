import requests
from django.core.management.base import BaseCommand

from clinic.models import Patient


class Command(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("--clinic", type=int)

    def handle(self, *args, clinic=None, **options):
        patients = Patient.objects.exclude(insurer_code="")
        if clinic:
            patients = patients.filter(clinic_id=clinic)
        codes = {
            patient.pk: requests.post(
                "https://insurers.example/lookup", json={"code": patient.insurer_code}, timeout=5
            ).json()["insurer"]
            for patient in patients
        }
        self.stdout.write(f"{len(codes)} patients checked")
