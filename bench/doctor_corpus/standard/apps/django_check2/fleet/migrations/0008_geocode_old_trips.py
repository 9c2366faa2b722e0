from django.db import migrations


def geocode(apps, schema_editor):
    from fleet.tasks import plan_geocode

    Tenant = apps.get_model("fleet", "Tenant")
    for tenant_id in Tenant.objects.values_list("id", flat=True):
        plan_geocode.delay(tenant_id)


class Migration(migrations.Migration):
    dependencies = [("fleet", "0007_seed_statuses")]

    operations = [migrations.RunPython(geocode, migrations.RunPython.noop)]
