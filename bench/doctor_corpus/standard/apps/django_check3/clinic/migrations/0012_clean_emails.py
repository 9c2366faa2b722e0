from django.db import migrations


def lowercase_emails(apps, schema_editor):
    Patient = apps.get_model("clinic", "Patient")
    for patient in Patient.objects.only("email").iterator(chunk_size=1000):
        Patient.objects.filter(pk=patient.pk).update(email=patient.email.lower())


class Migration(migrations.Migration):
    dependencies = [("clinic", "0011_seed_specialties")]
    operations = [migrations.RunPython(lowercase_emails, migrations.RunPython.noop)]
