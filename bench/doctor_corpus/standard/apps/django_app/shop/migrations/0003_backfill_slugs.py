from django.db import migrations
from django.utils.text import slugify


def backfill(apps, schema_editor):
    Order = apps.get_model("shop", "Order")
    for order in Order.objects.all():
        order.slug = slugify(order.number)
        order.save(update_fields=["slug"])


class Migration(migrations.Migration):
    dependencies = [("shop", "0002_order_slug")]
    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
