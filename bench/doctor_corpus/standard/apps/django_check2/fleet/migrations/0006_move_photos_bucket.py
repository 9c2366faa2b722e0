import boto3
from django.db import migrations


def move_photos(apps, schema_editor):
    Photo = apps.get_model("fleet", "Photo")
    s3 = boto3.client("s3")
    for photo in Photo.objects.iterator(chunk_size=500):
        s3.copy_object(
            Bucket="fleet-media",
            Key=f"photos/{photo.key}",
            CopySource={"Bucket": "fleet-photos", "Key": photo.key},
        )


class Migration(migrations.Migration):
    dependencies = [("fleet", "0005_default_vehicle_status")]

    operations = [migrations.RunPython(move_photos, migrations.RunPython.noop)]
