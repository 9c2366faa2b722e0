from django.db import migrations


def seed(apps, schema_editor):
    Status = apps.get_model("fleet", "Status")
    Status.objects.bulk_create([Status(code=code) for code in ("ok", "warning", "fault")], ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [("fleet", "0006_move_photos_bucket")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
