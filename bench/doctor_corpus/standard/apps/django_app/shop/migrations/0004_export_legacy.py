from django.db import migrations


def export_legacy(apps, schema_editor):
    from shop.tasks import plan_order_export

    plan_order_export.delay(1, 1)


class Migration(migrations.Migration):
    dependencies = [("shop", "0003_backfill_slugs")]
    operations = [migrations.RunPython(export_legacy, migrations.RunPython.noop)]
