from django.db import migrations

SPECIALTIES = [("gp", "General practice"), ("derm", "Dermatology"), ("cardio", "Cardiology")]


def seed(apps, schema_editor):
    Specialty = apps.get_model("clinic", "Specialty")
    for code, label in SPECIALTIES:
        Specialty.objects.get_or_create(code=code, defaults={"label": label})


class Migration(migrations.Migration):
    dependencies = [("clinic", "0010_default_country")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
