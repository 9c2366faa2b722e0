from django.db import migrations


def default_country(apps, schema_editor):
    Patient = apps.get_model("clinic", "Patient")
    Patient.objects.filter(country="").update(country="NL")


class Migration(migrations.Migration):
    dependencies = [("clinic", "0009_refill_full_names")]
    operations = [migrations.RunPython(default_country, migrations.RunPython.noop)]
