from django.db import migrations


def backfill_user_org_memberships(apps, schema_editor):
    """Backfill each user's B2B organization memberships from their contracts."""
    User = apps.get_model("users", "User")
    OrganizationPage = apps.get_model("b2b", "OrganizationPage")

    for user in User.objects.all():
        user_org_ids = user.b2b_contracts.values_list("organization", flat=True).distinct()
        for org in OrganizationPage.objects.filter(pk__in=user_org_ids):
            user.b2b_organizations.add(org, through_defaults={"keep_until_seen": True})


class Migration(migrations.Migration):
    dependencies = [("b2b", "0009_contractpage_membership_type_and_more")]

    operations = [
        migrations.RunPython(backfill_user_org_memberships, migrations.RunPython.noop),
    ]
