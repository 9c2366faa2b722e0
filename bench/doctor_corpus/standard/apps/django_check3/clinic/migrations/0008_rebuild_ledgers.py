from django.db import migrations


def rebuild_ledgers(apps, schema_editor):
    from clinic.tasks import rebuild_clinic_ledger

    Clinic = apps.get_model("clinic", "Clinic")
    for clinic_id in Clinic.objects.values_list("id", flat=True):
        rebuild_clinic_ledger.delay(clinic_id)


class Migration(migrations.Migration):
    dependencies = [("clinic", "0007_fill_full_names")]
    operations = [migrations.RunPython(rebuild_ledgers, migrations.RunPython.noop)]
