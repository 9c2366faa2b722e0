import boto3
import requests
from celery import group, shared_task
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.core.mail import send_mail
from django.db.models import F, Max, Min
from django.utils import timezone

from shop.models import Customer, Invoice, Order, OrderExport

RANGE = 50
SLICE = 200


@shared_task
def plan_order_export(project_id, export_id, start=None):
    """The coordinator: lowest and highest id once, a slice of ranges, then the next one."""
    bounds = Order.objects.filter(project_id=project_id).aggregate(low=Min("id"), high=Max("id"))
    if bounds["high"] is None:
        return
    if start is None:
        start = bounds["low"]
        total = bounds["high"] - bounds["low"] + 1
        OrderExport.objects.filter(pk=export_id).update(total_orders=total)
    until = min(start + RANGE * SLICE - 1, bounds["high"])
    ranges = [(first, min(first + RANGE - 1, until)) for first in range(start, until + 1, RANGE)]
    group(
        export_orders.si(project_id, export_id, first, last).set(queue="exports")
        for first, last in ranges
    ).apply_async()
    if until < bounds["high"]:
        plan_order_export.apply_async((project_id, export_id, until + 1), queue="exports")


@shared_task
def export_orders(project_id, export_id, first, last):
    """A small job over the id range it was given."""
    s3 = boto3.client("s3")
    orders = Order.objects.filter(project_id=project_id, id__range=(first, last))
    for order in orders:
        s3.put_object(Bucket="exports", Key=f"{export_id}/{order.pk}.json", Body=order.number)
    OrderExport.objects.filter(pk=export_id).update(exported_orders=F("exported_orders") + last - first + 1)


@shared_task
def finish_export(export_id):
    OrderExport.objects.filter(pk=export_id).update(finished=True)


@shared_task
def sync_all_customers():
    for customer in Customer.objects.all():
        answer = requests.get(f"https://crm.example/customers/{customer.crm_id}", timeout=5)
        customer.email = answer.json()["email"]
        customer.save(update_fields=["email"])


@shared_task
def plan_invoice_export():
    ids = list(Invoice.objects.values_list("id", flat=True))
    group(export_invoice.s(invoice_id) for invoice_id in ids).apply_async()


@shared_task
def export_invoice(invoice_id):
    invoice = Invoice.objects.get(pk=invoice_id)
    boto3.client("s3").put_object(Bucket="invoices", Key=f"{invoice.pk}.txt", Body=invoice.number)
    send_invoice_copy.delay(invoice_id)


@shared_task
def send_invoice_copy(invoice_id):
    invoice = Invoice.objects.select_related("order__customer").get(pk=invoice_id)
    send_mail("Your invoice", invoice.number, None, [invoice.order.customer.email])


@shared_task
def reindex_orders():
    last_id = cache.get("reindex:last_id", 0)
    orders = list(Order.objects.filter(id__gt=last_id).order_by("id")[:500])
    if not orders:
        cache.delete("reindex:last_id")
        return
    for order in orders:
        requests.post("https://search.example/index", json={"id": order.pk}, timeout=5)
    cache.set("reindex:last_id", orders[-1].pk)
    reindex_orders.delay()


@shared_task
def export_orders_file(project_id):
    lines = [
        f"{order.number},{order.total}"
        for order in Order.objects.filter(project_id=project_id).iterator()
    ]
    key = f"orders/{project_id}.csv"
    boto3.client("s3").put_object(Bucket="exports", Key=key, Body="\n".join(lines))
    return key


@shared_task
def prune_sessions():
    Session.objects.filter(expire_date__lt=timezone.now()).delete()
