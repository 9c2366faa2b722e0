from django.db import migrations, models


def default_status(apps, schema_editor):
    Vehicle = apps.get_model("fleet", "Vehicle")
    Vehicle.objects.filter(status="").update(status="active")


class Migration(migrations.Migration):
    dependencies = [("fleet", "0004_backfill_photo_hashes")]

    operations = [
        migrations.AlterField("vehicle", "status", models.CharField(max_length=20, default="active")),
        migrations.RunPython(default_status, migrations.RunPython.noop),
    ]
