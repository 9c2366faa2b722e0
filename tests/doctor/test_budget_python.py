"""The time-budget rules on Python code: each fixture is cut from the shapes real Django,
Flask, FastAPI, Celery and tenure projects use, and each has a quiet twin in the standard's
right shape that must stay silent."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tenure.doctor import diagnose
from tenure.doctor.rules import RULES

from conftest import write


def budget(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, str, int | None]]:
    write(tmp_path, {name: textwrap.dedent(text) for name, text in files.items()})
    report = diagnose(None, str(tmp_path), history=False, detect=False)
    return sorted(
        (f.rule, str(f.location.path), f.location.line)
        for f in report.findings
        if RULES[f.rule].group == "budget"
    )


DJANGO_VIEW = """
    from django.core.mail import send_mail
    from django.http import JsonResponse

    from shop.models import Invoice, Order


    def close_month(request):
        for order in Order.objects.filter(shop=request.user.shop, closed=False):
            order.closed = True
            order.save(update_fields=["closed"])
        return JsonResponse({"ok": True})


    def remind(request):
        unpaid = Invoice.objects.filter(paid=False).select_related("customer")
        for invoice in unpaid:
            send_mail("Reminder", invoice.text(), None, [invoice.customer.email])
        return JsonResponse({"sent": True})
"""
DJANGO_VIEW_QUIET = """
    from django.http import JsonResponse

    from shop.models import Order
    from shop.tasks import close_orders


    def close_month(request):
        Order.objects.filter(shop=request.user.shop, closed=False).update(closed=True)
        return JsonResponse({"ok": True})


    def close_later(request):
        close_orders.delay(request.user.shop_id)
        return JsonResponse({"queued": True})


    def latest(request):
        rows = [{"id": o.id, "total": o.total} for o in Order.objects.all()[:20]]
        for status in ("open", "closed"):
            Order.objects.create(status=status)
        return JsonResponse({"rows": rows})
"""


def test_django_view_walking_rows(tmp_path: Path) -> None:
    assert budget(tmp_path, {"shop/views.py": DJANGO_VIEW}) == [
        ("work-in-request", "shop/views.py", 9),
        ("work-in-request", "shop/views.py", 17),
    ]


def test_django_view_quiet_twin(tmp_path: Path) -> None:
    assert budget(tmp_path, {"shop/views.py": DJANGO_VIEW_QUIET}) == []


def test_drf_viewset_model_method_followed(tmp_path: Path) -> None:
    """The per-row work sits in a model method: followed into the project's own code."""
    found = budget(tmp_path, {
        "shop/models.py": """
            import requests
            from django.db import models

            class Order(models.Model):
                def push_to_erp(self):
                    requests.post("https://erp.example/orders", json={"id": self.id}, timeout=5)
        """,
        "shop/api.py": """
            from rest_framework import viewsets
            from rest_framework.decorators import action

            from shop.models import Order

            class OrderViewSet(viewsets.ModelViewSet):
                @action(detail=False, methods=["post"])
                def sync(self, request):
                    for order in self.get_queryset().filter(synced=False).iterator():
                        order.push_to_erp()
                    return Response(status=204)

                def list(self, request):
                    return Response([o.id for o in Order.objects.all()[:50]])
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "shop/api.py", 10)]


def test_flask_and_fastapi_routes(tmp_path: Path) -> None:
    found = budget(tmp_path, {
        "app/routes.py": """
            import httpx
            import requests
            from flask import Blueprint

            from app.models import User, db

            bp = Blueprint("admin", __name__)

            @bp.route("/recompute", methods=["POST"])
            def recompute():
                for user in User.query.filter_by(active=True).all():
                    user.score = 0
                    db.session.commit()
                return "", 204

            @bp.get("/weather")
            def weather():
                return requests.get("https://api.example/weather").json()

            @bp.get("/weather-timed")
            def weather_timed():
                return httpx.get("https://api.example/weather", timeout=3).json()
        """,
    })  # fmt: skip
    assert found == [
        ("work-in-request", "app/routes.py", 12),
        ("work-in-request", "app/routes.py", 19),
    ]


def test_request_waits_for_job(tmp_path: Path) -> None:
    found = budget(tmp_path, {
        "api/main.py": """
            from fastapi import APIRouter

            from api.tasks import build_report

            router = APIRouter()

            @router.post("/reports")
            def create_report(shop_id: int):
                result = build_report.delay(shop_id)
                return {"report": result.get(timeout=60)}

            @router.post("/reports-queued")
            def queue_report(shop_id: int):
                result = build_report.delay(shop_id)
                return {"id": result.id}
        """,
    })  # fmt: skip
    assert found == [("request-waits-for-job", "api/main.py", 11)]


COMMAND = """
    from django.core.management.base import BaseCommand

    from billing.models import Subscription


    class Command(BaseCommand):
        help = "Renew every subscription due today"

        def handle(self, *args, **options):
            for sub in Subscription.objects.filter(due=True):
                self.renew(sub)

        def renew(self, sub):
            sub.renewed = True
            sub.save()
"""
COMMAND_QUIET = """
    from django.core.management.base import BaseCommand
    from django.db.models import Max, Min

    from billing.models import Subscription
    from billing.tasks import renew_range


    class Command(BaseCommand):
        def handle(self, *args, **options):
            bounds = Subscription.objects.aggregate(lo=Min("id"), hi=Max("id"))
            renew_range.delay(bounds["lo"], bounds["hi"])
"""


def test_management_command(tmp_path: Path) -> None:
    assert budget(tmp_path, {"billing/management/commands/renew.py": COMMAND}) == [
        ("work-in-command", "billing/management/commands/renew.py", 11)
    ]
    assert budget(tmp_path, {"billing/management/commands/renew.py": COMMAND_QUIET}) == []


def test_click_command(tmp_path: Path) -> None:
    found = budget(tmp_path, {
        "cli.py": """
            import click

            from app.models import Photo, session

            @click.command()
            def thumbnails():
                for photo in session.query(Photo).all():
                    photo.make_thumbnail()

            @click.command()
            def count():
                click.echo(session.query(Photo).count())
        """,
        "app/models.py": """
            class Photo:
                def make_thumbnail(self):
                    with open(self.path + ".thumb", "wb") as out:
                        out.write(b"")
        """,
    })  # fmt: skip
    assert found == [("work-in-command", "cli.py", 8)]


def test_django_runpython_migration(tmp_path: Path) -> None:
    found = budget(tmp_path, {
        "shop/migrations/0042_backfill.py": """
            from django.db import migrations

            def backfill(apps, schema_editor):
                Order = apps.get_model("shop", "Order")
                for order in Order.objects.all():
                    order.total_cents = order.total * 100
                    order.save()

            class Migration(migrations.Migration):
                operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
        """,
        "shop/migrations/0043_set.py": """
            from django.db import migrations
            from django.db.models import F

            def backfill(apps, schema_editor):
                Order = apps.get_model("shop", "Order")
                Order.objects.filter(total_cents=None).update(total_cents=F("total") * 100)

            class Migration(migrations.Migration):
                operations = [migrations.RunPython(backfill)]
        """,
    })  # fmt: skip
    assert found == [("work-in-migration", "shop/migrations/0042_backfill.py", 6)]


CELERY_TASKS = """
    from celery import group, shared_task
    from django.core.cache import cache

    from shop.models import Customer, Order


    @shared_task
    def recalculate_totals():
        for order in Order.objects.filter(archived=False).iterator():
            order.recalculate()
            order.save()


    @shared_task
    def fan_out():
        ids = Order.objects.values_list("id", flat=True)
        group(export_one.s(pk) for pk in ids).apply_async()


    @shared_task
    def export_one(pk):
        order = Order.objects.get(pk=pk)
        notify_customer.delay(order.customer_id)


    @shared_task
    def notify_customer(customer_id):
        Customer.objects.filter(pk=customer_id).update(notified=True)


    @shared_task
    def reindex(offset=0):
        last_id = cache.get("reindex:last_id", 0)
        rows = list(Order.objects.filter(id__gt=last_id).order_by("id")[:500])
        cache.set("reindex:last_id", rows[-1].id)
        reindex.delay(offset + 500)
"""
CELERY_TASKS_QUIET = """
    from celery import group, shared_task
    from django.db.models import Max, Min

    from shop.models import Order


    @shared_task
    def start_recalculation():
        bounds = Order.objects.aggregate(lo=Min("id"), hi=Max("id"))
        lo, hi = bounds["lo"], bounds["hi"]
        group(
            recalculate_range.s(a, min(a + 999, hi)) for a in range(lo, hi + 1, 1000)
        ).apply_async(queue="recalc")


    @shared_task
    def recalculate_range(lo, hi):
        for order in Order.objects.filter(id__range=(lo, hi)):
            order.recalculate()
            order.save()


    @shared_task
    def send_receipt(order_id):
        order = Order.objects.get(pk=order_id)
        order.mark_sent()
"""


def test_celery_job_rules(tmp_path: Path) -> None:
    assert budget(tmp_path, {"shop/tasks.py": CELERY_TASKS}) == [
        ("batch-floods-queue", "shop/tasks.py", 18),
        ("coordinator-walks-rows", "shop/tasks.py", 17),
        ("job-not-batched", "shop/tasks.py", 10),
        ("job-resumes-from-cursor", "shop/tasks.py", 37),
        ("member-dispatches", "shop/tasks.py", 24),
        ("member-dispatches", "shop/tasks.py", 37),  # it sends itself on, too
    ]


def test_celery_job_quiet_twin(tmp_path: Path) -> None:
    """The standard's right shape: a coordinator reading min/max once, members over ranges."""
    assert budget(tmp_path, {"shop/tasks.py": CELERY_TASKS_QUIET}) == []


def test_tenure_job_not_batched_and_its_batched_twin(tmp_path: Path) -> None:
    found = budget(tmp_path, {
        "jobs.py": """
            import tenure

            from shop.models import Order

            app = tenure.App("sqlite:///jobs.db")

            @app.job(timeout=60)
            def rebuild_search():
                for order in Order.objects.all():
                    order.index()

            @app.job(timeout=5)
            def rebuild_range(lo: int, hi: int):
                for order in Order.objects.filter(id__gte=lo, id__lte=hi):
                    order.index()

            def start():
                app.batch_over_ids(rebuild_range, 1, 100_000, chunk=500)
        """,
        "shop/models.py": """
            class Order:
                def index(self):
                    self.search.update(self.id, {"total": self.total})
        """,
    })  # fmt: skip
    assert found == [("job-not-batched", "jobs.py", 10)]


def test_model_methods_and_mixins_are_not_views(tmp_path: Path) -> None:
    """A model whose bases end in Mixin is not a view; `copy.copy` is not a file operation."""
    found = budget(tmp_path, {
        "gym/models.py": """
            import copy

            from django.db import models

            class Routine(HistoryMixin, models.Model):
                def delete(self, *args, **kwargs):
                    for day in self.days.all():
                        day.reset_cache()
                    super().delete(*args, **kwargs)

            class RoutineView(LoginRequiredMixin, UpdateView):
                def get(self, request, pk):
                    days = [copy.copy(d) for d in Routine.objects.get(pk=pk).days.all()]
                    for day in Routine.objects.get(pk=pk).days.all():
                        clone = copy.copy(day)
                    return render(request, "routine.html", {"days": days})
        """,
    })  # fmt: skip
    assert found == []


def test_per_row_call_named_for_work_counts_when_its_body_is_elsewhere(tmp_path: Path) -> None:
    """`order.export()` from a package the doctor does not read: its name says it works per
    row; `order.total_display()` says nothing and stays quiet."""
    found = budget(tmp_path, {
        "shop/views.py": """
            from shop.models import Order

            def export_all(request):
                for order in Order.objects.filter(shop=request.user.shop):
                    order.export_to_erp()

            def totals(request):
                return [order.total_display() for order in Order.objects.all()[:100]]

            def names(request):
                out = []
                for order in Order.objects.filter(shop=request.user.shop):
                    out.append(order.customer_name())
                return out
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "shop/views.py", 5)]


STANDARD_CELERY_RIGHT = {
    "shop/models.py": """
        from django.db import models

        from shop.tasks import plan_order_export


        class Project(models.Model):
            def start_order_export(self):
                export = self.order_exports.create()
                plan_order_export.apply_async((self.id, export.id, None), queue="exports")
                return export
    """,
    "shop/views.py": """
        from django.http import JsonResponse
        from django.shortcuts import get_object_or_404

        from shop.models import OrderExport, Project


        def export(request, pk):
            project = get_object_or_404(Project, pk=pk)
            export = project.start_order_export()
            return JsonResponse({"export": export.id, "state": "running"})


        def export_progress(request, pk):
            export = get_object_or_404(OrderExport, pk=pk)
            return JsonResponse({"progress": export.processed_rows / export.total_rows})
    """,
    "shop/tasks.py": """
        from celery import group, shared_task
        from django.core.files.storage import default_storage
        from django.db.models import Max, Min

        from shop.models import Order

        SLICE = 50 * 200


        @shared_task
        def plan_order_export(project_id, export_id, start):
            orders = Order.objects.filter(project_id=project_id)
            bounds = orders.aggregate(lo=Min("id"), hi=Max("id"))
            if bounds["hi"] is None:
                return
            lo = start if start is not None else bounds["lo"]
            until = min(lo + SLICE - 1, bounds["hi"])
            group(
                export_orders.s(project_id, export_id, a, min(a + 49, until))
                for a in range(lo, until + 1, 50)
            ).apply_async(queue="exports")
            if until < bounds["hi"]:
                plan_order_export.apply_async((project_id, export_id, until + 1), queue="exports")


        @shared_task(time_limit=30)
        def export_orders(project_id, export_id, lo, hi):
            for order in Order.objects.filter(project_id=project_id, id__range=(lo, hi)):
                default_storage.save(f"exports/{export_id}/{order.id}.json", order.as_file())
    """,
}


def test_the_standards_right_shapes_in_django_and_celery(tmp_path: Path) -> None:
    """The standard's right example written for Django + Celery: quiet."""
    assert budget(tmp_path, STANDARD_CELERY_RIGHT) == []


def test_the_standards_wrong_shapes_in_django_and_celery(tmp_path: Path) -> None:
    found = budget(tmp_path, {
        "shop/models.py": """
            from django.core.files.storage import default_storage
            from django.db import models

            class Project(models.Model):
                def export_order(self, order):
                    default_storage.save(f"exports/{order.id}.json", order.as_file())
        """,
        "shop/views.py": """
            from django.shortcuts import get_object_or_404

            from shop.models import Project

            def export(request, pk):
                project = get_object_or_404(Project, pk=pk)
                for order in project.orders.all():
                    project.export_order(order)
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "shop/views.py", 8)]


def test_django_admin_action_and_drf_get_queryset(tmp_path: Path) -> None:
    found = budget(tmp_path, {
        "shop/admin.py": """
            from django.contrib import admin

            from shop.tasks import resend_receipts

            @admin.action(description="Resend receipts")
            def resend(modeladmin, request, queryset):
                for order in queryset:
                    order.send_receipt()

            @admin.action(description="Resend receipts later")
            def resend_later(modeladmin, request, queryset):
                resend_receipts.delay(list(queryset.values_list("id", flat=True)))

            @admin.action(description="Mark paid")
            def mark_paid(modeladmin, request, queryset):
                queryset.update(paid=True)
        """,
        "shop/api.py": """
            from rest_framework import viewsets

            class InvoiceViewSet(viewsets.ModelViewSet):
                def destroy(self, request, pk=None):
                    for line in self.get_queryset().filter(invoice_id=pk):
                        line.delete()
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "shop/admin.py", 8), ("work-in-request", "shop/api.py", 6)]


def test_alembic_upgrade(tmp_path: Path) -> None:
    found = budget(tmp_path, {
        "migrations/versions/3f2a_backfill_slugs.py": """
            import sqlalchemy as sa
            from alembic import op

            revision = "3f2a"
            down_revision = "1b0c"

            def upgrade():
                conn = op.get_bind()
                for row in conn.execute(sa.text("SELECT id, title FROM posts")):
                    conn.execute(sa.text("UPDATE posts SET slug = :s WHERE id = :i"),
                                 {"s": row.title.lower(), "i": row.id})

            def downgrade():
                op.execute("UPDATE posts SET slug = NULL")
        """,
    })  # fmt: skip
    assert found == [("work-in-migration", "migrations/versions/3f2a_backfill_slugs.py", 10)]


def test_waiting_only_in_a_test_branch_is_quiet(tmp_path: Path) -> None:
    """Cut from open-event-server: `task.get()` only when Celery runs eagerly (tests)."""
    found = budget(tmp_path, {
        "app/api/exports.py": """
            from flask import Blueprint, current_app, jsonify

            from app.tasks import export_event_task

            bp = Blueprint("exports", __name__)

            @bp.route("/events/<int:event_id>/export", methods=["POST"])
            def export_event(event_id):
                task = export_event_task.delay(event_id)
                if current_app.config.get("CELERY_ALWAYS_EAGER"):
                    return jsonify(result=task.get())
                return jsonify(task_id=task.id)
        """,
    })  # fmt: skip
    assert found == []
