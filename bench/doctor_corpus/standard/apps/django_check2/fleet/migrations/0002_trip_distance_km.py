from django.db import migrations


def fill_distance_km(apps, schema_editor):
    Trip = apps.get_model("fleet", "Trip")
    for trip in Trip.objects.all():
        trip.distance_km = trip.distance_m / 1000
        trip.save(update_fields=["distance_km"])


class Migration(migrations.Migration):
    dependencies = [("fleet", "0001_initial")]

    operations = [migrations.RunPython(fill_distance_km, migrations.RunPython.noop)]
