from django.db import migrations


def fill_full_names(apps, schema_editor):
    Patient = apps.get_model("clinic", "Patient")
    for patient in Patient.objects.all():
        patient.full_name = f"{patient.first_name} {patient.last_name}".strip()
        patient.save()


class Migration(migrations.Migration):
    dependencies = [("clinic", "0006_patient_full_name")]
    operations = [migrations.RunPython(fill_full_names, migrations.RunPython.noop)]
