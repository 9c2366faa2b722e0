from django.db import migrations

CHUNK = 200


def backfill_totals(apps, schema_editor):
    from shop.tasks_migrations import recompute_totals_for

    Order = apps.get_model("shop", "Order")
    ids = list(Order.objects.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), CHUNK):
        recompute_totals_for.apply_async((ids[start : start + CHUNK],), queue="migrations")


class Migration(migrations.Migration):
    dependencies = [("shop", "0004_export_legacy")]
    operations = [migrations.RunPython(backfill_totals, migrations.RunPython.noop)]
