from django.db import migrations

CHUNK = 300


def queue_full_names(apps, schema_editor):
    from clinic.tasks_migrations import fill_full_names

    Patient = apps.get_model("clinic", "Patient")
    ids = Patient.objects.filter(full_name="").order_by("pk").values_list("pk", flat=True)
    chunk = []
    for pk in ids.iterator():
        chunk.append(pk)
        if len(chunk) == CHUNK:
            fill_full_names.apply_async((chunk,), queue="migrations")
            chunk = []
    if chunk:
        fill_full_names.apply_async((chunk,), queue="migrations")


class Migration(migrations.Migration):
    dependencies = [("clinic", "0008_rebuild_ledgers")]
    operations = [migrations.RunPython(queue_full_names, migrations.RunPython.noop)]
