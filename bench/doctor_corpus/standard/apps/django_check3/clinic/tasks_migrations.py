from celery import shared_task

from clinic.models import Patient


@shared_task(time_limit=20)
def fill_full_names(patient_ids):
    """One small job per chunk of ids a migration selected."""
    for patient in Patient.objects.filter(pk__in=patient_ids):
        patient.full_name = f"{patient.first_name} {patient.last_name}".strip()
        patient.save(update_fields=["full_name"])
