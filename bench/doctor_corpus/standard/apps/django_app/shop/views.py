import csv

import requests
from django.core.cache import cache
from django.core.mail import send_mail
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect

from shop.models import Order, Project
from shop.tasks import export_orders_file


def resend_receipts(request, project_id):
    for order in Order.objects.filter(project_id=project_id, status="paid"):
        send_mail("Your receipt", f"Order {order.number}", None, [order.customer.email])
    return redirect("project", project_id)


def sync_rates(request):
    rates = requests.get("https://rates.example/latest").json()
    cache.set("rates", rates)
    return redirect("home")


def orders_csv(request, project_id):
    response = HttpResponse(content_type="text/csv")
    writer = csv.writer(response)
    for order in Order.objects.filter(project_id=project_id).iterator():
        writer.writerow([order.number, order.status, order.invoice_set.count()])
    return response


def export_and_wait(request, project_id):
    result = export_orders_file.delay(project_id)
    path = result.get(timeout=30)
    return JsonResponse({"file": path})


def start_export(request, project_id):
    project = get_object_or_404(Project, pk=project_id)
    export = project.start_order_export()
    return JsonResponse({"export": export.pk}, status=202)


def archive_closed(request, project_id):
    Order.objects.filter(project_id=project_id, status="closed").update(archived=True)
    return redirect("project", project_id)


def create_order(request, project_id):
    order = Order.objects.create(
        project_id=project_id, customer_id=request.POST["customer"], number=request.POST["number"]
    )
    return redirect("order", order.pk)


def quote(request):
    answer = requests.get("https://carrier.example/quote", params=request.GET, timeout=3)
    return JsonResponse(answer.json())


def clear_counters(request):
    for key in ("orders:open", "orders:paid", "orders:closed"):
        cache.delete(key)
    return redirect("home")
