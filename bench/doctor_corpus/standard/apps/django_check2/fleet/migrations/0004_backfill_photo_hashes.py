from django.db import migrations

CHUNK = 25


def queue_hash_chunks(apps, schema_editor):
    from fleet.tasks import backfill_photo_hashes

    Photo = apps.get_model("fleet", "Photo")
    ids = list(Photo.objects.filter(sha256="").order_by("id").values_list("id", flat=True))
    for n, start in enumerate(range(0, len(ids), CHUNK)):
        backfill_photo_hashes.apply_async((ids[start:start + CHUNK],), countdown=n // 10, queue="migrations")


class Migration(migrations.Migration):
    dependencies = [("fleet", "0003_rehash_photos")]

    operations = [migrations.RunPython(queue_hash_chunks, migrations.RunPython.noop)]
