"""What a loop over rows costs, in Python: the shapes issue 28's second pass taught the
doctor. Each fixture is rewritten from a shape real Django, Flask and FastAPI projects use
(not copied), each with its quiet twin in the standard's right shape."""

from __future__ import annotations

from pathlib import Path

from test_budget_python import budget


def test_runpython_given_by_keyword(tmp_path: Path) -> None:
    """`RunPython(code=fill, reverse_code=noop)` (a trading app's PnL backfill) is read like
    the positional form; the twin is one set statement."""
    found = budget(tmp_path, {
        "ledger/migrations/0012_fill_pnls.py": """
            from django.db import migrations

            def fill_pnls(apps, schema_editor):
                Pnl = apps.get_model("ledger", "Pnl")
                for pnl in Pnl.objects.all():
                    pnl.balance = pnl.service.balance
                    pnl.save()

            class Migration(migrations.Migration):
                operations = [
                    migrations.RunPython(code=fill_pnls, reverse_code=migrations.RunPython.noop),
                ]
        """,
        "ledger/migrations/0013_reset.py": """
            from django.db import migrations

            def reset(apps, schema_editor):
                Pnl = apps.get_model("ledger", "Pnl")
                Pnl.objects.filter(balance=None).update(balance=0)

            class Migration(migrations.Migration):
                operations = [migrations.RunPython(code=reset, reverse_code=reset)]
        """,
    })  # fmt: skip
    assert found == [("work-in-migration", "ledger/migrations/0012_fill_pnls.py", 6)]


def test_many_to_many_add_per_row_and_the_chunked_twin(tmp_path: Path) -> None:
    """A labels app's migration adds each user's resources to a many-to-many relation, row by
    row; the twin selects only the ids and sends one small job per chunk of them."""
    found = budget(tmp_path, {
        "labels/migrations/0002_migrate_users.py": """
            from django.db import migrations

            def migrate_users(apps, schema_editor):
                User = apps.get_model("auth", "User")
                Label = apps.get_model("labels", "Label")
                for user in User.objects.all():
                    for label in Label.objects.filter(owner_id=user.pk):
                        user.labels.add(label)

            class Migration(migrations.Migration):
                operations = [migrations.RunPython(migrate_users, migrations.RunPython.noop)]
        """,
        "labels/migrations/0003_chunked.py": """
            from django.db import migrations

            from labels.tasks import relabel

            CHUNK = 200

            def migrate_users(apps, schema_editor):
                User = apps.get_model("auth", "User")
                ids = list(User.objects.order_by("id").values_list("id", flat=True))
                for start in range(0, len(ids), CHUNK):
                    relabel.apply_async((ids[start : start + CHUNK],), queue="migrations")

            class Migration(migrations.Migration):
                operations = [migrations.RunPython(migrate_users, migrations.RunPython.noop)]
        """,
    })  # fmt: skip
    assert found == [("work-in-migration", "labels/migrations/0002_migrate_users.py", 7)]


def test_csv_rows_and_a_query_per_row_in_a_view(tmp_path: Path) -> None:
    """A report view writes one csv line per order and counts each order's invoices (a query
    per row); the twin streams nothing per row: it starts the export job and answers."""
    found = budget(tmp_path, {
        "reports/views.py": """
            import csv

            from django.http import HttpResponse, JsonResponse

            from reports.models import Order
            from reports.tasks import export_orders


            def orders_csv(request, shop_id):
                response = HttpResponse(content_type="text/csv")
                writer = csv.writer(response)
                for order in Order.objects.filter(shop_id=shop_id).iterator():
                    writer.writerow([order.number, order.invoice_set.count()])
                return response


            def start_csv(request, shop_id):
                export_orders.delay(shop_id)
                return JsonResponse({"started": True}, status=202)
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "reports/views.py", 13)]


def test_rows_collected_then_spent(tmp_path: Path) -> None:
    """A community task builds one mail per first-time contributor and sends them all at the
    end; a command groups reviewed suggestions per author and notifies each. The twins collect
    the same rows but only count them."""
    found = budget(tmp_path, {
        "community/tasks.py": """
            from celery import shared_task
            from django.core.mail import EmailMessage, send_mass_mail

            from community.models import Answer, User


            @shared_task
            def welcome_contributors():
                messages = []
                for user in User.objects.filter(profile__welcomed=False):
                    messages.append(("Welcome", "Thanks!", None, [user.email]))
                send_mass_mail(messages)


            @shared_task
            def count_contributors():
                seen = []
                for user in User.objects.filter(profile__welcomed=False):
                    seen.append(user.pk)
                print(len(seen))
        """,
        "community/management/commands/notify_reviews.py": """
            from collections import defaultdict

            from django.core.mail import send_mail
            from django.core.management.base import BaseCommand

            from community.models import Suggestion


            class Command(BaseCommand):
                def handle(self, *args, **options):
                    per_author = defaultdict(list)
                    for suggestion in Suggestion.objects.filter(reviewed=True):
                        per_author[suggestion.author].append(suggestion.pk)
                    for author, ids in per_author.items():
                        send_mail("Reviewed", f"{len(ids)} suggestions", None, [author.email])
        """,
    })  # fmt: skip
    assert found == [
        ("job-not-batched", "community/tasks.py", 11),
        ("work-in-command", "community/management/commands/notify_reviews.py", 15),
    ]


def test_loop_inside_the_helper_an_entry_point_calls(tmp_path: Path) -> None:
    """A Flask CLI report (`fqdn(deployment)`) and a view that calls a notifying helper: the
    loop sits one call away, named at the call. The twin's helper works on one row only."""
    found = budget(tmp_path, {
        "certs/cli.py": """
            import click

            from certs.models import Certificate


            @click.command()
            def expiring_command():
                expiring("all")


            def expiring(owner):
                for cert in Certificate.query.filter_by(owner=owner).all():
                    for domain in cert.domains:
                        click.echo(domain.name)
        """,
        "certs/views.py": """
            from django.http import JsonResponse
            from django.views.decorators.http import require_POST

            from certs.models import Certificate


            def _renew_one(cert):
                cert.renewed = True
                cert.save()


            @require_POST
            def renew(request):
                cert = Certificate.objects.get(pk=request.POST["id"])
                _renew_one(cert)
                return JsonResponse({"ok": True})
        """,
    })  # fmt: skip
    assert found == [("work-in-command", "certs/cli.py", 9)]


def test_rows_of_a_data_access_function_handed_the_session(tmp_path: Path) -> None:
    """FastAPI endpoints loop over what `get_pairs(db_session)` returns and call a function
    handed the session for each; the twin reads one row by id."""
    found = budget(tmp_path, {
        "api/settings.py": """
            from fastapi import APIRouter, Depends

            from api.db import get_pair, get_pairs, get_session, reseed_pair

            router = APIRouter()


            @router.post("/settings")
            def save_settings(db_session=Depends(get_session)):
                for pair in get_pairs(db_session):
                    reseed_pair(pair_id=pair.id, db_session=db_session)
                db_session.commit()


            @router.post("/settings/{pair_id}")
            def save_one(pair_id: int, db_session=Depends(get_session)):
                pair = get_pair(db_session, pair_id)
                reseed_pair(pair_id=pair.id, db_session=db_session)
                db_session.commit()
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "api/settings.py", 11)]


def test_plain_function_handed_to_a_queue_is_a_job(tmp_path: Path) -> None:
    """An RQ-style module enqueues a plain function (`queue.enqueue(refresh_all)`, a scheduler
    given `function=`): it runs as a job, so walking every row in it is one big job. The twin
    function is never queued (a helper called in the request's answer path is not a job)."""
    found = budget(tmp_path, {
        "projects/tasks.py": """
            from projects.models import Project
            from projects.queues import job_scheduler, queue


            def schedule_refresh():
                job_scheduler(queue_name="long-running", function=refresh_all, job_timeout=3600)


            def schedule_touch():
                queue.enqueue(touch_all)


            def refresh_all():
                for project in Project.objects.filter(kind="fdi").iterator():
                    project.save(update_fields=["value"])


            def touch_all():
                for project in Project.objects.all():
                    project.save()


            def helper():
                for project in Project.objects.all():
                    project.save()
        """,
    })  # fmt: skip
    assert found == [
        ("job-not-batched", "projects/tasks.py", 15),
        ("job-not-batched", "projects/tasks.py", 20),
    ]
