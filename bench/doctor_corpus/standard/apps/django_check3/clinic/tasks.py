import logging

import requests
from celery import chord, group, shared_task
from django.core.cache import cache
from django.core.mail import send_mail
from django.db.models import F, Max, Min
from django.utils import timezone

from clinic.celery import app
from clinic.models import Appointment, Hold, Invoice, InvoiceExport, Patient, SyncState
from clinic.services import send_reminder

log = logging.getLogger(__name__)

RANGE = 40
SLICE = 150
LAB_PAGE = 100


@shared_task(time_limit=30)
def plan_invoice_export(clinic_id, export_id, start=None):
    """The coordinator: lowest and highest id once, a slice of ranges, then the next slice."""
    span = Invoice.objects.filter(clinic_id=clinic_id).aggregate(low=Min("id"), high=Max("id"))
    if span["high"] is None:
        InvoiceExport.objects.filter(pk=export_id).update(state="finished")
        return
    if start is None:
        start = span["low"]
        InvoiceExport.objects.filter(pk=export_id).update(total_invoices=span["high"] - start + 1)
    until = min(start + RANGE * SLICE - 1, span["high"])
    jobs = [
        export_invoices.si(clinic_id, export_id, first, min(first + RANGE - 1, until))
        for first in range(start, until + 1, RANGE)
    ]
    group(jobs).apply_async(queue="exports")
    if until < span["high"]:
        plan_invoice_export.apply_async((clinic_id, export_id, until + 1), queue="exports")


@shared_task(time_limit=20)
def export_invoices(clinic_id, export_id, first, last):
    """A small job over the id range it was given."""
    for invoice in Invoice.objects.filter(clinic_id=clinic_id, id__range=(first, last)):
        invoice.store_pdf()
    InvoiceExport.objects.filter(pk=export_id).update(
        exported_invoices=F("exported_invoices") + (last - first + 1)
    )


@shared_task
def send_daily_digest():
    for patient in Patient.objects.filter(wants_digest=True).only("email"):
        send_mail("Your day at the clinic", "...", "noreply@clinic.example", [patient.email])


@shared_task
def rebuild_clinic_ledger(clinic_id):
    invoices = Invoice.objects.filter(clinic_id=clinic_id).select_related("patient")
    for invoice in invoices:
        invoice.paid = invoice.patient.outstanding_balance() == 0
        invoice.save(update_fields=["paid"])
    return clinic_id


@app.task
def plan_reminders(day):
    ids = list(
        Appointment.objects.filter(day=day, status="booked").values_list("id", flat=True)
    )
    group(send_one_reminder.s(appointment_id) for appointment_id in ids).apply_async()


@app.task(soft_time_limit=10)
def send_one_reminder(appointment_id):
    appointment = Appointment.objects.select_related("patient").get(pk=appointment_id)
    send_reminder(appointment)
    follow_up.apply_async((appointment_id,), countdown=3600)


@app.task
def follow_up(appointment_id):
    Appointment.objects.filter(pk=appointment_id, status="booked").update(status="reminded")


@shared_task(bind=True, max_retries=5)
def import_lab_results(self):
    cursor = cache.get("labs:last-result-id", 0)
    results = requests.get(
        "https://labs.example/api/results", params={"after": cursor, "limit": LAB_PAGE}, timeout=4
    ).json()["results"]
    for result in results:
        Patient.objects.filter(pk=result["patient"]).update(last_lab=result["value"])
        cursor = result["id"]
    cache.set("labs:last-result-id", cursor, None)
    if len(results) == LAB_PAGE:
        import_lab_results.apply_async(countdown=10)


@shared_task
def sync_pharmacy_orders():
    state, _ = SyncState.objects.get_or_create(name="pharmacy")
    batch = list(Invoice.objects.filter(id__gt=state.last_id).order_by("id")[:200])
    for invoice in batch:
        requests.post("https://pharmacy.example/orders", json={"invoice": invoice.pk}, timeout=3)
    if batch:
        state.last_id = batch[-1].pk
        state.save(update_fields=["last_id"])


@shared_task
def plan_statement_run(month):
    header = [
        render_statement.s(invoice.pk).set(queue="statements")
        for invoice in Invoice.objects.filter(status="open", created__month=month)
    ]
    chord(header)(statements_done.si(month))


@shared_task
def render_statement(invoice_id):
    Invoice.objects.get(pk=invoice_id).store_pdf()


@shared_task
def statements_done(month):
    log.info("statements for month %s are ready", month)


@shared_task
def expire_holds():
    Hold.objects.filter(expires_at__lt=timezone.now()).delete()
