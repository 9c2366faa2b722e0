import csv
import json

import requests
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.views import View
from django.views.decorators.http import require_POST

from fleet.models import Tenant, Trip, Vehicle
from fleet.services import email_trip_summary, reverse_geocode
from fleet.tasks import build_fleet_report


@require_POST
def resend_trip_summaries(request, tenant_id):
    since = timezone.now() - timezone.timedelta(days=7)
    for trip in Trip.objects.filter(tenant_id=tenant_id, ended_at__gte=since).select_related("driver"):
        email_trip_summary(trip)
    return JsonResponse({"ok": True})


@require_POST
def regenerate_thumbnails(request, trip_id):
    trip = get_object_or_404(Trip, pk=trip_id)
    for photo in trip.photos.all():
        photo.make_thumbnail()
    return JsonResponse({"ok": True})


@require_POST
def notify_webhook(request, tenant_id):
    tenant = get_object_or_404(Tenant, pk=tenant_id)
    requests.post(tenant.webhook_url, json={"event": "fleet.updated", "tenant": tenant.pk})
    return JsonResponse({"sent": True})


def where_am_i(request):
    address = reverse_geocode(float(request.GET["lat"]), float(request.GET["lon"]))
    return JsonResponse({"address": address})


@require_POST
def end_open_trips(request, vehicle_id):
    ended = Trip.objects.filter(vehicle_id=vehicle_id, ended_at__isnull=True).update(ended_at=timezone.now())
    return JsonResponse({"ended": ended})


def fleet_overview(request, tenant_id):
    counts = {}
    for status in ("active", "idle", "in_repair", "retired"):
        counts[status] = Vehicle.objects.filter(tenant_id=tenant_id, status=status).count()
    return JsonResponse(counts)


def fleet_report(request, tenant_id):
    report = build_fleet_report.delay(tenant_id).get(timeout=120)
    return JsonResponse(report)


@require_POST
def start_export(request, tenant_id):
    tenant = get_object_or_404(Tenant, pk=tenant_id)
    export = tenant.start_trip_export()
    return JsonResponse({"export": export.pk, "progress_url": f"/api/exports/{export.pk}/progress/"}, status=202)


@require_POST
def add_vehicle(request, tenant_id):
    data = json.loads(request.body)
    vehicle = Vehicle.objects.create(tenant_id=tenant_id, plate=data["plate"].upper())
    return JsonResponse({"id": vehicle.pk}, status=201)


class VehicleCsvView(View):
    def get(self, request, tenant_id):
        response = HttpResponse(content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="vehicles.csv"'
        writer = csv.writer(response)
        writer.writerows(
            (v.plate, v.status, v.trips.count()) for v in Vehicle.objects.filter(tenant_id=tenant_id)
        )
        return response
