from django.db import migrations, models
from django.utils import timezone


def set_internal_fks(apps, schema_editor):
    """Reference Bugscache from BugJobMap instead of the bare Bugzilla id."""
    BugJobMap = apps.get_model("model", "BugJobMap")
    Bugscache = apps.get_model("model", "Bugscache")
    now = timezone.now()
    for bug_job_map in BugJobMap.objects.only("id", "bugzilla_id").iterator():
        bugscache, _ = Bugscache.objects.get_or_create(
            bugzilla_id=bug_job_map.bugzilla_id,
            defaults={"modified": now, "summary": "(no bug data fetched)"},
        )
        bug_job_map.bug_id = bugscache.id
        bug_job_map.save()


class Migration(migrations.Migration):
    dependencies = [("model", "0036_bugscache_init_autoincrement")]

    operations = [
        migrations.AddField(
            model_name="bugjobmap",
            name="bug",
            field=models.ForeignKey(null=True, on_delete=models.CASCADE, to="model.bugscache"),
        ),
        migrations.RunPython(set_internal_fks, reverse_code=migrations.RunPython.noop),
    ]
