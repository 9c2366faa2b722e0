"""Everyday Python shapes the budget rules read (issue 28's fourth pass): rows walked
through `enumerate()`, an open-ended slice, a huey task, a cursor kept in a settings row.
Each fixture is rewritten from real code found through the code search index (which names
the text, not always the repository), each with its bounded twin that must stay quiet."""

from __future__ import annotations

from pathlib import Path

from test_budget_python import budget


def test_enumerate_over_a_querysets_rows_is_a_loop(tmp_path: Path) -> None:
    """A Safe transaction service's backfill command: `for i, multisig_tx in
    enumerate(queryset.iterator()): ... multisig_tx.save(update_fields=[...])` (code index,
    find_string "in enumerate(queryset.iterator("). The twin counts a page of 100."""
    found = budget(tmp_path, {
        "history/__init__.py": "",
        "history/management/commands/add_payments.py": """
            from django.core.management.base import BaseCommand

            from history.models import MultisigTransaction


            class Command(BaseCommand):
                def handle(self, *args, **options):
                    queryset = MultisigTransaction.objects.filter(payment=None)
                    for i, multisig_tx in enumerate(queryset.iterator()):
                        multisig_tx.payment = i
                        multisig_tx.save(update_fields=["payment"])
        """,
        "history/management/commands/show_payments.py": """
            from django.core.management.base import BaseCommand

            from history.models import MultisigTransaction


            class Command(BaseCommand):
                def handle(self, *args, **options):
                    queryset = MultisigTransaction.objects.filter(payment=None)
                    for i, multisig_tx in enumerate(queryset[:100]):
                        multisig_tx.save(update_fields=["payment"])
        """,
    })  # fmt: skip
    assert found == [("work-in-command", "history/management/commands/add_payments.py", 10)]


def test_an_open_ended_slice_is_every_row_past_it(tmp_path: Path) -> None:
    """A newsletter command: `queryset = queryset[offset:]` then `for idx, sub in
    enumerate(queryset.iterator()): send_mail(...)` (code index, same search): skipping
    the first rows bounds nothing. The twin's `[offset:offset + 50]` is one page."""
    command = """
        from django.core.mail import send_mail
        from django.core.management.base import BaseCommand

        from news.models import Subscriber


        class Command(BaseCommand):
            def handle(self, *args, **options):
                offset = options["offset"]
                queryset = Subscriber.objects.filter(active=True)[{cut}]
                for idx, sub in enumerate(queryset.iterator()):
                    send_mail("News", "...", None, [sub.email])
    """
    found = budget(tmp_path, {
        "news/__init__.py": "",
        "news/management/commands/send_all.py": command.format(cut="offset:"),
        "news/management/commands/send_page.py": command.format(cut="offset:offset + 50"),
    })  # fmt: skip
    assert found == [("work-in-command", "news/management/commands/send_all.py", 12)]


def test_a_huey_db_task_is_a_job(tmp_path: Path) -> None:
    """An air-quality app's huey task: `@db_task(queue='secondary') def
    copy_legacy_entries(monitor_id)` walks every entry of a monitor and writes per row
    (code index, find_string "in enumerate(queryset.iterator("). The twin copies the
    range of entries it was given."""
    found = budget(tmp_path, {
        "camp/__init__.py": "",
        "camp/tasks.py": """
            from huey.contrib.djhuey import db_task

            from camp.models import Entry, Monitor


            @db_task(queue="secondary")
            def copy_legacy_entries(monitor_id):
                monitor = Monitor.objects.get(pk=monitor_id)
                for i, entry in enumerate(monitor.entries.all().iterator()):
                    entry.save()


            @db_task(queue="secondary")
            def copy_legacy_range(monitor_id, lo, hi):
                for entry in Entry.objects.filter(monitor_id=monitor_id, id__range=(lo, hi)):
                    entry.save()
        """,
    })  # fmt: skip
    assert found == [("job-not-batched", "camp/tasks.py", 10)]


def test_a_cursor_kept_in_a_settings_row(tmp_path: Path) -> None:
    """A sync task keeps where it stopped in a row of its own (`state.last_id`, written back
    with `state.save()`), as teams do when they have no cache: a retry skips a range. The
    twin is handed its range and writes no cursor."""
    found = budget(tmp_path, {
        "shop/__init__.py": "",
        "shop/tasks.py": """
            from celery import shared_task

            from shop.models import Order, SyncState


            @shared_task
            def sync_orders():
                state = SyncState.objects.get(name="orders")
                for order in Order.objects.filter(id__gt=state.last_id).order_by("id")[:500]:
                    order.save()
                    state.last_id = order.id
                    state.save()


            @shared_task
            def sync_range(lo, hi):
                for order in Order.objects.filter(id__range=(lo, hi)):
                    order.save()
        """,
    })  # fmt: skip
    assert found == [("job-resumes-from-cursor", "shop/tasks.py", 10)]


def test_a_view_that_polls_its_job_waits_for_it(tmp_path: Path) -> None:
    """A search view sends a task and spins `while not result.ready(): pass` before it
    answers (code index, find_string "while not result.ready():"; its `.get()` is left out
    here so the loop alone is what waits). The twin answers with the task's id."""
    found = budget(tmp_path, {
        "web/__init__.py": "",
        "web/views.py": """
            from django.http import JsonResponse

            from web.tasks import search


            def search_request(request):
                result = search.delay(request.GET.get("query"))
                while not result.ready():
                    pass
                return JsonResponse(result.result)


            def search_start(request):
                result = search.delay(request.GET.get("query"))
                return JsonResponse({"task": result.id, "ready": result.ready()})
        """,
    })  # fmt: skip
    assert found == [("request-waits-for-job", "web/views.py", 9)]


def test_a_cursor_kept_under_a_key_of_a_settings_table(tmp_path: Path) -> None:
    """The key-value form of the settings-table cursor (the Laravel apps' `Setting::where(
    'key', 'last_user_id')`, code index): `Setting.objects.get(key="orders_last_id")` read,
    `update_or_create(key="orders_last_id", ...)` written back per row. The twin stores
    a report's name under a key that is not a cursor."""
    found = budget(tmp_path, {
        "shop/__init__.py": "",
        "shop/tasks.py": """
            from celery import shared_task

            from shop.models import Order, Setting


            @shared_task
            def sync_orders():
                last_id = int(Setting.objects.get(key="orders_last_id").value)
                for order in Order.objects.filter(id__gt=last_id).order_by("id")[:500]:
                    order.save()
                    Setting.objects.update_or_create(
                        key="orders_last_id", defaults={"value": order.id}
                    )


            @shared_task
            def name_report(report_id):
                title = Setting.objects.get(key="report_title").value
                Setting.objects.update_or_create(key="report_title", defaults={"value": title})
        """,
    })  # fmt: skip
    assert found == [("job-resumes-from-cursor", "shop/tasks.py", 9)]


def test_a_service_module_or_class_the_view_calls_is_followed(tmp_path: Path) -> None:
    """Django views that call into the app's own services (`from . import services;
    services.remind_unpaid()`, `from .services import Reminder; Reminder().remind_unpaid()`),
    the split many Django teams use: the service walks every unpaid invoice and mails
    each (rewritten to that shape, not cut from one project). The twin calls a library module
    (`json.dumps`), which is not the project's and is not followed."""
    services = """
        from django.core.mail import send_mail

        from shop.models import Invoice


        def remind_unpaid():
            for invoice in Invoice.objects.filter(paid=False):
                send_mail("Unpaid", "...", None, [invoice.email])


        class Reminder:
            def remind_unpaid(self):
                remind_unpaid()
                for invoice in Invoice.objects.filter(paid=False):
                    send_mail("Unpaid", "...", None, [invoice.email])
    """
    found = budget(tmp_path, {
        "shop/__init__.py": "",
        "shop/services.py": services,
        "shop/views.py": """
            import json

            from django.http import JsonResponse

            from . import services
            from .services import Reminder


            def remind(request):
                services.remind_unpaid()
                return JsonResponse({})


            def remind_all(request):
                Reminder().remind_unpaid()
                return JsonResponse({})


            def status(request):
                return JsonResponse(json.loads(json.dumps({"ok": True})))
        """,
    })  # fmt: skip
    assert found == [
        ("work-in-request", "shop/views.py", 11),
        ("work-in-request", "shop/views.py", 16),
    ]


def test_rows_of_a_custom_manager_method(tmp_path: Path) -> None:
    """hjkelly/ptl, ptl/data_apps/interactions/models.py: `profiles =
    Profile.objects.confirmed_for_reminders()` then `for p in profiles:
    Reminder.objects.create(profile=p)`, called from a management command. A manager
    method iterated is a queryset. The twin walks one page of it (`[:50]`)."""
    models = """
        from django.db import models

        from ptl.profiles.models import Profile


        class Reminder(models.Model):
            pass


        def send_reminders():
            profiles = Profile.objects.confirmed_for_reminders()
            for p in profiles:
                Reminder.objects.create(profile=p)


        def send_first_reminders():
            for p in Profile.objects.confirmed_for_reminders()[:50]:
                Reminder.objects.create(profile=p)
    """
    command = """
        from django.core.management.base import BaseCommand

        from ptl.models import {name}


        class Command(BaseCommand):
            def handle(self, *args, **options):
                {name}()
    """
    found = budget(tmp_path, {
        "ptl/__init__.py": "",
        "ptl/models.py": models,
        "ptl/management/commands/remind.py": command.format(name="send_reminders"),
        "ptl/management/commands/remind_first.py": command.format(name="send_first_reminders"),
    })  # fmt: skip
    assert found == [("work-in-command", "ptl/management/commands/remind.py", 9)]


def test_a_task_that_sends_itself_on_from_the_last_row(tmp_path: Path) -> None:
    """An account-pruning task deletes a chunk and sends itself on with
    `self.delay(last_pk=admins[-1].pk)` (code index, find_string ".delay(last_pk="); the
    same with `apply_async(kwargs={"offset": offset + BATCH})`. A retry of either skips or
    repeats a range. The twin is handed its range by its coordinator and sends nothing."""
    found = budget(tmp_path, {
        "acc/__init__.py": "",
        "acc/tasks.py": """
            from celery import shared_task

            from acc.models import Admin

            BATCH = 100


            @shared_task
            def prune_admins(last_pk=0):
                admins = list(Admin.objects.filter(pk__gt=last_pk).order_by("pk")[:BATCH])
                for admin in admins:
                    admin.delete()
                if admins:
                    prune_admins.delay(last_pk=admins[-1].pk)


            @shared_task
            def prune_by_offset(offset=0):
                for admin in Admin.objects.order_by("pk")[offset : offset + BATCH]:
                    admin.delete()
                prune_by_offset.apply_async(kwargs={"offset": offset + BATCH})


            @shared_task
            def prune_range(lo, hi):
                for admin in Admin.objects.filter(pk__range=(lo, hi)):
                    admin.delete()
        """,
    })  # fmt: skip
    assert [f for f in found if f[0] == "job-resumes-from-cursor"] == [
        ("job-resumes-from-cursor", "acc/tasks.py", 15),
        ("job-resumes-from-cursor", "acc/tasks.py", 22),
    ]
    assert not [f for f in found if f[2] > 23]  # the ranged twin stays quiet


def test_a_class_based_celery_task_is_a_job(tmp_path: Path) -> None:
    """The account-pruning task of the last test is class-based in its project (`class
    ...(NotifyBaseTask)` with `run(self, last_pk=None)` sending itself on with
    `self.delay(last_pk=admins[-1].pk)`, code index): run() is the job's body. The twin
    is a class-based task over the range it was given."""
    found = budget(tmp_path, {
        "acc/__init__.py": "",
        "acc/tasks.py": """
            from celery import Task

            from acc.models import Admin


            class PruneAdmins(Task):
                chunk_size = 100

                def run(self, last_pk=None):
                    admins = list(Admin.objects.filter(pk__gt=last_pk)[: self.chunk_size])
                    for admin in admins:
                        admin.delete()
                    if admins:
                        self.delay(last_pk=admins[-1].pk)


            class PruneRange(Task):
                def run(self, lo, hi):
                    for admin in Admin.objects.filter(pk__range=(lo, hi)):
                        admin.delete()
        """,
    })  # fmt: skip
    assert ("job-resumes-from-cursor", "acc/tasks.py", 15) in found
    assert not [f for f in found if f[2] > 16]  # the ranged twin stays quiet


def test_a_task_called_inline_per_row(tmp_path: Path) -> None:
    """mozilla/kitsune, kitsune/kbadge/management/commands/award_badges.py: `for user in
    User.objects.filter(id__in=user_ids): maybe_award_badge(badge, year, user.id)`, the
    function imported from `kitsune.wiki.tasks` and called, not sent: the task's body runs
    in the command once per row. The twin sends one task per year of a fixed list."""
    command = """
        from django.contrib.auth.models import User
        from django.core.management.base import BaseCommand

        from kitsune.wiki.models import Revision
        from kitsune.wiki.tasks import award_year, maybe_award_badge


        class Command(BaseCommand):
            def handle(self, *arg, **kwargs):
                {body}
    """
    per_row = """user_ids = Revision.objects.values_list("creator_id", flat=True)
                for user in User.objects.filter(id__in=user_ids):
                    maybe_award_badge("kb-badge", 2013, user.id)"""
    per_year = """for year in [2010, 2011, 2012, 2013]:
                    award_year.delay(year)"""
    found = budget(tmp_path, {
        "kitsune/__init__.py": "",
        "kitsune/kbadge/management/commands/award_badges.py": command.format(body=per_row),
        "kitsune/kbadge/management/commands/award_years.py": command.format(body=per_year),
    })  # fmt: skip
    assert found == [("work-in-command", "kitsune/kbadge/management/commands/award_badges.py", 12)]
