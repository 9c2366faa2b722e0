from django.db import migrations


def queue_rehash(apps, schema_editor):
    from fleet.tasks import plan_photo_rehash

    plan_photo_rehash.delay()


class Migration(migrations.Migration):
    dependencies = [("fleet", "0002_trip_distance_km")]

    operations = [migrations.RunPython(queue_rehash, reverse_code=migrations.RunPython.noop)]
