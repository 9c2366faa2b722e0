"""The everyday variants of the standard's shapes in Python (issue 28's third pass): each
fixture is rewritten from a shape a real project uses, each with its bounded twin."""

from __future__ import annotations

from pathlib import Path

from test_budget_python import budget


def test_a_group_built_from_every_row_is_a_coordinator_walking_rows(tmp_path: Path) -> None:
    """A Flask project's Celery task reads every task id and builds one group member per row
    (`group(t.s(task.id) for task in task_ids)`); the twin reads min and max once and adds one
    member per range, on a queue of its own."""
    found = budget(tmp_path, {
        "worker/tasks.py": """
            from celery import group
            from sqlalchemy import func

            from app import db
            from app.models import Task
            from worker.worker import celery


            @celery.task(name="task.generate_numbers")
            def generate_numbers():
                task_ids = db.session.query(Task.id).all()
                g = group(generate_number.s(task.id) for task in task_ids)
                g.apply_async()


            @celery.task(name="task.plan_numbers")
            def plan_numbers():
                lo, hi = db.session.query(func.min(Task.id), func.max(Task.id)).one()
                members = (generate_range.s(s, min(s + 49, hi)) for s in range(lo, hi + 1, 50))
                group(members).apply_async(queue="numbers")


            @celery.task
            def generate_number(task_id):
                db.session.query(Task).filter(Task.id == task_id).update({"done": True})


            @celery.task
            def generate_range(lo, hi):
                db.session.query(Task).filter(Task.id.between(lo, hi)).update({"done": True})
        """,
    })  # fmt: skip
    rules = {(rule, line) for rule, _, line in found}
    assert ("coordinator-walks-rows", 13) in rules
    assert all(line < 16 for _, line in rules)  # the twin stays quiet


def test_a_comprehension_over_rows_is_a_loop(tmp_path: Path) -> None:
    """An admin action saves each selected row in a list comprehension (`[obj.save() for obj
    in queryset]`, the shape of a mail app's toggle action); the twin is one set statement."""
    found = budget(tmp_path, {
        "mail/admin.py": """
            from django.contrib import admin
            from django.db.models import Q

            from mail.models import Signature


            @admin.action(description="Toggle")
            def switch_signature_state(modeladmin, request, queryset):
                [setattr(obj, "active", not obj.active) for obj in queryset]
                [obj.save() for obj in queryset]


            @admin.action(description="Deactivate")
            def deactivate(modeladmin, request, queryset):
                queryset.update(active=False)
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "mail/admin.py", 11)]


def test_a_related_manager_filtered_is_a_query(tmp_path: Path) -> None:
    """A helpdesk mails every active user of a ticket's department
    (`for user in ticket.department.user_set.filter(is_active=True)`), written here in a view;
    the twin mails the one person assigned."""
    found = budget(tmp_path, {
        "helpdesk/views.py": """
            from django.core.mail import send_mail
            from django.http import JsonResponse

            from helpdesk.models import Ticket


            def notify_department(request, pk):
                ticket = Ticket.objects.get(pk=pk)
                for user in ticket.department.user_set.filter(is_active=True):
                    send_mail("New ticket", ticket.title, None, [user.email])
                return JsonResponse({"ok": True})


            def notify_assignee(request, pk):
                ticket = Ticket.objects.get(pk=pk)
                send_mail("New ticket", ticket.title, None, [ticket.assigned_to.email])
                return JsonResponse({"ok": True})
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "helpdesk/views.py", 10)]


def test_a_fixed_list_of_ids_is_bounded(tmp_path: Path) -> None:
    """`filter(id__in=[1, 2, 3])`: a fixed list written in the code is the standard's bounded
    work; the same loop over every row is not."""
    found = budget(tmp_path, {
        "plans/views.py": """
            from django.http import JsonResponse

            from plans.models import Plan


            def reset_default_plans(request):
                for plan in Plan.objects.filter(id__in=[1, 2, 3]):
                    plan.price = plan.default_price
                    plan.save()
                return JsonResponse({"ok": True})


            def reset_all_plans(request):
                for plan in Plan.objects.all():
                    plan.price = plan.default_price
                    plan.save()
                return JsonResponse({"ok": True})
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "plans/views.py", 15)]


def test_a_cursor_written_inside_the_loop_is_a_stored_cursor(tmp_path: Path) -> None:
    """A sync task reads its last id from the cache and writes it back after each row (the
    write sits inside the loop); the twin is the small job over the range it was given."""
    found = budget(tmp_path, {
        "sync/tasks.py": """
            from celery import shared_task
            from django.core.cache import cache

            from sync.models import Contact


            @shared_task
            def push_contacts():
                last = cache.get("contacts_last_id", 0)
                for contact in Contact.objects.filter(id__gt=last).order_by("id")[:500]:
                    contact.push()
                    cache.set("contacts_last_id", contact.id)


            @shared_task
            def push_range(lo, hi):
                for contact in Contact.objects.filter(id__range=(lo, hi)):
                    contact.push()
        """,
    })  # fmt: skip
    assert found == [("job-resumes-from-cursor", "sync/tasks.py", 10)]


def test_a_queryset_refined_in_steps_is_still_a_query(tmp_path: Path) -> None:
    """`qs = Order.objects.filter(...)` then `qs = qs.filter(...)` (how list views narrow a
    query step by step) is one query; narrowed to the range the task was given, it is
    bounded."""
    found = budget(tmp_path, {
        "shop/views.py": """
            from django.http import JsonResponse

            from shop.models import Order


            def close_paid(request):
                qs = Order.objects.filter(customer=request.user.customer)
                qs = qs.filter(paid=True)
                for order in qs:
                    order.closed = True
                    order.save()
                return JsonResponse({"ok": True})
        """,
        "shop/tasks.py": """
            from celery import shared_task

            from shop.models import Order


            @shared_task
            def close_range(lo, hi):
                qs = Order.objects.filter(paid=True)
                qs = qs.filter(id__range=(lo, hi))
                for order in qs:
                    order.closed = True
                    order.save()
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "shop/views.py", 10)]


def test_async_orm_writes_per_row(tmp_path: Path) -> None:
    """An async view walks a QuerySet with `async for` and awaits `asave()` per row (Django's
    async ORM names); the twin awaits one `aupdate()`."""
    found = budget(tmp_path, {
        "shop/views.py": """
            from django.http import JsonResponse

            from shop.models import Order


            async def close_paid(request):
                async for order in Order.objects.filter(paid=True):
                    order.closed = True
                    await order.asave()
                return JsonResponse({"ok": True})


            async def close_paid_at_once(request):
                await Order.objects.filter(paid=True).aupdate(closed=True)
                return JsonResponse({"ok": True})
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "shop/views.py", 8)]


def test_a_group_of_members_filled_from_rows(tmp_path: Path) -> None:
    """`members = [t.s(o.id) for o in ...]` then `group(members).apply_async()` in a task (a
    coordinator walking rows, even on a queue of its own) and in a view (the request
    splitting the work onto the shared queue); the twin's members come from a fixed list."""
    found = budget(tmp_path, {
        "shop/tasks.py": """
            from celery import group, shared_task

            from shop.models import Order


            @shared_task
            def fan_out():
                members = [export_one.s(o.id) for o in Order.objects.filter(paid=True)]
                group(members).apply_async(queue="exports")


            @shared_task
            def fan_out_fixed():
                members = [export_one.s(i) for i in (1, 2, 3)]
                group(members).apply_async()


            @shared_task
            def export_one(order_id):
                Order.objects.filter(pk=order_id).update(exported=True)
        """,
        "shop/views.py": """
            from celery import group
            from django.http import JsonResponse

            from shop.models import Order
            from shop.tasks import export_one


            def start(request):
                members = [export_one.s(o.id) for o in Order.objects.filter(paid=True)]
                group(members).apply_async()
                return JsonResponse({"started": True})
        """,
    })  # fmt: skip
    assert found == [
        ("batch-floods-queue", "shop/views.py", 11),
        ("coordinator-walks-rows", "shop/tasks.py", 10),
        ("work-in-request", "shop/views.py", 11),
    ]


def test_a_task_sending_itself_on_through_a_local_offset(tmp_path: Path) -> None:
    """`next_start = start + size + 1` then `delete_chunk.delay(next_start, ...)`: the offset
    + N shape held in a local first; the twin is the member over the range it was given."""
    found = budget(tmp_path, {
        "shop/tasks.py": """
            from celery import shared_task

            from shop.models import Order


            @shared_task
            def delete_chunk(start, end, size):
                stop = min(start + size, end)
                Order.objects.filter(id__gte=start, id__lte=stop).delete()
                if stop < end:
                    next_start = start + size + 1
                    delete_chunk.delay(next_start, end, size)


            @shared_task
            def delete_range(start, stop):
                Order.objects.filter(id__gte=start, id__lte=stop).delete()
        """,
    })  # fmt: skip
    assert found == [
        ("job-resumes-from-cursor", "shop/tasks.py", 13),
        ("member-dispatches", "shop/tasks.py", 13),
    ]


def test_a_requests_session_or_httpx_client_without_a_timeout(tmp_path: Path) -> None:
    """Views call an API through a module-level `requests.Session()` and through `with
    requests.Session() as s:` with no timeout (requests waits forever); the twin's
    `httpx.Client(timeout=3)` defines one within the budget."""
    found = budget(tmp_path, {
        "rates/views.py": """
            import httpx
            import requests
            from django.http import JsonResponse

            session = requests.Session()


            def rate(request):
                return JsonResponse(session.get("https://rates.example/eur").json())


            def convert(request):
                with requests.Session() as s:
                    answer = s.post("https://rates.example/convert", json=request.GET.dict())
                return JsonResponse(answer.json())


            def rate_timed(request):
                with httpx.Client(timeout=3) as client:
                    answer = client.get("https://rates.example/eur")
                return JsonResponse(answer.json())
        """,
    })  # fmt: skip
    assert found == [
        ("work-in-request", "rates/views.py", 10),
        ("work-in-request", "rates/views.py", 15),
    ]


def test_the_lowest_and_highest_id_read_with_first_are_the_coordinators_own(
    tmp_path: Path,
) -> None:
    """A promo draw reads `lo = qs.order_by("id").values_list("id", flat=True).first()` and
    `hi` the same way from `-id`: one id each, the standard's coordinator reading min and max
    once. Written in a tenure coordinator it stays quiet; the twin lists every id."""
    found = budget(tmp_path, {
        "promos/jobs.py": """
            import tenure
            from django.conf import settings

            from promos.models import PromoCode

            app = tenure.App(settings.TENURE_URL)


            @app.job(timeout=30)
            def plan_draw() -> None:
                unused = PromoCode.objects.filter(is_drawn=False)
                lo = unused.order_by("id").values_list("id", flat=True).first()
                hi = unused.order_by("-id").values_list("id", flat=True).first()
                batch = tenure.current().batch
                batch.add(draw_range.sig(a, b) for a, b in tenure.ranges(lo, hi, 50))


            @app.job(timeout=30)
            def plan_draw_by_ids() -> None:
                ids = list(PromoCode.objects.filter(is_drawn=False).values_list("id", flat=True))
                batch = tenure.current().batch
                batch.add(draw_range.sig(i, i) for i in ids)


            @app.job(timeout=30)
            def draw_range(lo: int, hi: int) -> None:
                PromoCode.objects.filter(id__range=(lo, hi)).update(is_drawn=True)
        """,
    })  # fmt: skip
    assert found == [
        ("batch-floods-queue", "promos/jobs.py", 23),
        ("coordinator-walks-rows", "promos/jobs.py", 21),
    ]


def test_a_canvas_called_and_waited_on_in_a_view(tmp_path: Path) -> None:
    """Celery's own chord shape, `result = chord(header)(callback)` then `result.get()`, and
    `group(...)()` then `.get()`, written in views: calling a canvas sends it, so the request
    blocks on the batch. The twin reads a task's state and result without waiting (the
    shape of a progress endpoint, `AsyncResult(task_id).state`)."""
    found = budget(tmp_path, {
        "sums/views.py": """
            from celery import chord, group
            from celery.result import AsyncResult
            from django.http import JsonResponse

            from sums.tasks import add, tsum


            def total(request):
                result = chord([add.s(i, i) for i in range(10)])(tsum.s())
                return JsonResponse({"total": result.get(timeout=30)})


            def each(request):
                return JsonResponse({"each": group(add.s(i, i) for i in range(10))().get()})


            def progress(request):
                task = AsyncResult(request.GET["task_id"])
                return JsonResponse({"state": task.state, "result": task.result})
        """,
        "sums/tasks.py": """
            from celery import shared_task


            @shared_task
            def add(x, y):
                return x + y


            @shared_task
            def tsum(numbers):
                return sum(numbers)
        """,
    })  # fmt: skip
    assert found == [
        ("request-waits-for-job", "sums/views.py", 11),
        ("request-waits-for-job", "sums/views.py", 15),
    ]


def test_tenure_bulk_dispatch_of_every_row(tmp_path: Path) -> None:
    """tenure's own bulk sends, `job.dispatch_many((c.id,) for c in ...)` and
    `app.batch([job.sig(c.id) for c in ...])`, walk every row to make their jobs: in a job
    that is a coordinator walking rows, in a view the request splitting the work. The twin
    is the standard's shape in tenure, `app.batch_over_ids(job, lo, hi, chunk=50)`."""
    found = budget(tmp_path, {
        "shop/jobs.py": """
            import tenure
            from django.conf import settings

            from shop.models import Customer

            app = tenure.App(settings.TENURE_URL)


            @app.job(timeout=30)
            def fan_out() -> None:
                export_one.dispatch_many((c.id,) for c in Customer.objects.all())


            @app.job(timeout=30)
            def plan(lo: int, hi: int) -> None:
                app.batch_over_ids(export_range, lo, hi, chunk=50)


            @app.job(timeout=30)
            def export_one(cid: int) -> None:
                Customer.objects.filter(pk=cid).update(exported=True)


            @app.job(timeout=30)
            def export_range(lo: int, hi: int) -> None:
                Customer.objects.filter(id__range=(lo, hi)).update(exported=True)
        """,
        "shop/views.py": """
            from django.http import JsonResponse

            from shop.jobs import app, export_one
            from shop.models import Customer


            def start(request):
                app.batch([export_one.sig(c.id) for c in Customer.objects.all()])
                return JsonResponse({"started": True})
        """,
    })  # fmt: skip
    assert found == [
        ("batch-floods-queue", "shop/jobs.py", 12),
        ("batch-floods-queue", "shop/views.py", 9),
        ("coordinator-walks-rows", "shop/jobs.py", 12),
        ("work-in-request", "shop/views.py", 9),
    ]


def test_alembic_rows_changed_through_the_session_or_the_bind(tmp_path: Path) -> None:
    """The two ways a SQLAlchemy tutorial updates rows, "via objects" (`rows =
    session.query(Student).where(...).all(); for r in rows: r.sex = "f"` then one commit: an
    UPDATE per row at flush) and "directly" (`session.query(Student).where(...).update(...)`,
    one statement), written as Alembic migrations; plus the core shape over `bind =
    op.get_bind()`, one UPDATE per row."""
    found = budget(tmp_path, {
        "alembic/versions/a1_students.py": """
            import sqlalchemy as sa
            from alembic import op
            from sqlalchemy.orm import Session

            from school.models import Student

            revision = "a1"
            down_revision = None

            students = sa.table("students", sa.column("id"), sa.column("sex"))


            def upgrade():
                session = Session(bind=op.get_bind())
                rows = session.query(Student).where(Student.sex == "F").all()
                for r in rows:
                    r.sex = "f"
                session.commit()


            def downgrade():
                bind = op.get_bind()
                for row in bind.execute(sa.select(students.c.id).where(students.c.sex == "f")):
                    bind.execute(students.update().where(students.c.id == row.id).values(sex="F"))
        """,
        "alembic/versions/a2_students.py": """
            from alembic import op
            from sqlalchemy.orm import Session

            from school.models import Student

            revision = "a2"
            down_revision = "a1"


            def upgrade():
                session = Session(bind=op.get_bind())
                session.query(Student).where(Student.sex == "M").update({Student.sex: "m"})
                session.commit()


            def downgrade():
                op.execute("UPDATE students SET sex = 'M' WHERE sex = 'm'")
        """,
    })  # fmt: skip
    assert found == [
        ("work-in-migration", "alembic/versions/a1_students.py", 17),
        ("work-in-migration", "alembic/versions/a1_students.py", 24),
    ]


def test_a_bulk_send_handed_a_comprehension_over_rows(tmp_path: Path) -> None:
    """`send_mass_mail((subject, body, None, [u.email]) for u in User.objects.filter(...))`
    (Django's bulk mail, the Python twin of Laravel's `Notification::send($users, ...)`): a
    message per row, built and sent in the request. The twins send to a fixed list, and hand
    one job every id (one dispatch, not one per row)."""
    found = budget(tmp_path, {
        "news/views.py": """
            from django.contrib.auth.models import User
            from django.core.mail import send_mass_mail
            from django.http import JsonResponse

            from news.tasks import announce_to


            def announce(request):
                body = request.POST["body"]
                send_mass_mail(("News", body, None, [u.email]) for u in User.objects.all())
                return JsonResponse({"sent": True})


            def announce_staff(request):
                body = request.POST["body"]
                send_mass_mail(("News", body, None, [a]) for a in ("a@x.org", "b@x.org"))
                return JsonResponse({"sent": True})


            def announce_later(request):
                announce_to.delay([u.pk for u in User.objects.all()], request.POST["body"])
                return JsonResponse({"started": True})
        """,
    })  # fmt: skip
    assert found == [("work-in-request", "news/views.py", 11)]


def test_a_timeout_of_none_or_a_long_read_timeout_is_past_the_budget(tmp_path: Path) -> None:
    """`timeout=None` (requests waits forever) and `timeout=(3.05, 27)` (the connect and read
    pair requests' own docs show: up to 30 s) are not defined within the 5-second budget;
    the twin's `(2, 3)` is."""
    found = budget(tmp_path, {
        "geo/views.py": """
            import requests
            from django.http import JsonResponse


            def lookup(request):
                answer = requests.get("https://geo.example/ip", timeout=None)
                return JsonResponse(answer.json())


            def lookup_slow(request):
                answer = requests.get("https://geo.example/ip", timeout=(3.05, 27))
                return JsonResponse(answer.json())


            def lookup_quick(request):
                answer = requests.get("https://geo.example/ip", timeout=(2, 3))
                return JsonResponse(answer.json())
        """,
    })  # fmt: skip
    assert found == [
        ("work-in-request", "geo/views.py", 7),
        ("work-in-request", "geo/views.py", 12),
    ]


def test_a_function_queued_from_another_module_is_a_job(tmp_path: Path) -> None:
    """Data Hub's tasks module defines plain functions; its signals module imports one and
    hands it to the RQ scheduler (`job_scheduler(function=update_..._task, ...)`), so it
    runs as a job, and it walks every project of a multiplier, saving each. The twin, a
    function of the same module that nothing queues, is not a job."""
    found = budget(tmp_path, {
        "datahub/investment/project/tasks.py": """
            from datahub.investment.project.models import GVAMultiplier


            def update_investment_projects_for_gva_multiplier_task(gva_multiplier_id):
                instance = GVAMultiplier.objects.get(id=gva_multiplier_id)
                for investment_project in instance.investment_projects.all().iterator():
                    investment_project.save(update_fields=["gross_value_added"])


            def refresh_one(gva_multiplier_id):
                instance = GVAMultiplier.objects.get(id=gva_multiplier_id)
                for investment_project in instance.investment_projects.all().iterator():
                    investment_project.save(update_fields=["gross_value_added"])
        """,
        "datahub/investment/project/signals.py": """
            from django.db.models.signals import post_save
            from django.dispatch import receiver

            from datahub.core.queues.job_scheduler import job_scheduler
            from datahub.investment.project.models import GVAMultiplier
            from datahub.investment.project.tasks import (
                update_investment_projects_for_gva_multiplier_task,
            )


            @receiver(post_save, sender=GVAMultiplier)
            def update_gva(sender, instance, **kwargs):
                job_scheduler(
                    function=update_investment_projects_for_gva_multiplier_task,
                    function_args=(instance.pk,),
                )
        """,
    })  # fmt: skip
    assert found == [("job-not-batched", "datahub/investment/project/tasks.py", 7)]
