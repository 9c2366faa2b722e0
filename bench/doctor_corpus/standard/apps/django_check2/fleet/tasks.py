import csv
import hashlib
import io

import boto3
import requests
from celery import chord, group, shared_task
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.mail import send_mail
from django.db.models import Max, Min, Sum
from django.utils import timezone

from fleet.models import Driver, Photo, Position, Trip, TripExport, Vehicle
from fleet.services import email_trip_summary, pull_tracker, reverse_geocode

RANGE = 50
RANGES_PER_SLICE = 200


@shared_task(soft_time_limit=20)
def plan_trip_export(export_id, start=None):
    export = TripExport.objects.get(pk=export_id)
    trips = Trip.objects.filter(tenant_id=export.tenant_id)
    bounds = trips.aggregate(low=Min("id"), high=Max("id"))
    if bounds["high"] is None:
        TripExport.objects.filter(pk=export_id).update(state="finished")
        return
    if start is None:
        start = bounds["low"]
        TripExport.objects.filter(pk=export_id, total__isnull=True).update(total=bounds["high"] - bounds["low"] + 1)
    until = min(start + RANGE * RANGES_PER_SLICE - 1, bounds["high"])
    members = group(
        export_trip_range.si(export_id, first, min(first + RANGE - 1, until))
        for first in range(start, until + 1, RANGE)
    )
    result = members.apply_async(queue="exports")
    result.save()
    TripExport.objects.filter(pk=export_id).update(group_id=result.id)
    if until < bounds["high"]:
        plan_trip_export.apply_async((export_id, until + 1), queue="exports", countdown=10)


@shared_task(acks_late=True, soft_time_limit=30)
def export_trip_range(export_id, first, last):
    export = TripExport.objects.get(pk=export_id)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for trip in Trip.objects.filter(tenant_id=export.tenant_id, id__range=(first, last)).select_related("driver"):
        writer.writerow([trip.pk, trip.driver.email, trip.distance_m])
    name = f"exports/{export_id}/{first:012d}.csv"
    if not default_storage.exists(name):
        default_storage.save(name, ContentFile(buffer.getvalue()))
    export.add_done(last - first + 1)


@shared_task
def plan_photo_rehash():
    photo_ids = list(Photo.objects.filter(sha256="").values_list("id", flat=True))
    chord(rehash_photo.si(photo_id) for photo_id in photo_ids)(rehash_done.si())


@shared_task
def rehash_photo(photo_id):
    photo = Photo.objects.get(pk=photo_id)
    body = boto3.client("s3").get_object(Bucket="fleet-photos", Key=photo.key)["Body"].read()
    Photo.objects.filter(pk=photo_id).update(sha256=hashlib.sha256(body).hexdigest())


@shared_task
def rehash_done():
    cache.set("photos:rehashed_at", timezone.now().isoformat())


@shared_task
def plan_geocode(tenant_id):
    bounds = Trip.objects.filter(tenant_id=tenant_id, end_address="").aggregate(Min("id"), Max("id"))
    low, high = bounds["id__min"], bounds["id__max"]
    if low is None:
        return
    group(geocode_trips.s(tenant_id, start, min(start + 19, high)) for start in range(low, high + 1, 20)).delay()


@shared_task(soft_time_limit=30)
def geocode_trips(tenant_id, first, last):
    trips = Trip.objects.filter(tenant_id=tenant_id, id__range=(first, last), end_address="")
    for trip in trips.prefetch_related("positions"):
        last_point = trip.positions.order_by("-recorded_at").first()
        if last_point is None:
            notify_driver.delay(trip.driver_id, trip.pk)
            continue
        trip.end_address = reverse_geocode(last_point.lat, last_point.lon)
        trip.save(update_fields=["end_address"])


@shared_task
def notify_driver(driver_id, trip_id):
    driver = Driver.objects.get(pk=driver_id)
    send_mail("Trip without positions", f"Trip {trip_id} has no GPS data.", "fleet@example.com", [driver.email])


@shared_task
def recompute_driver_scores():
    for driver in Driver.objects.filter(active=True):
        driver.recompute_score()


@shared_task
def email_daily_summaries(tenant_id):
    yesterday = timezone.localdate() - timezone.timedelta(days=1)
    trips = Trip.objects.filter(tenant_id=tenant_id, ended_at__date=yesterday).select_related("driver")
    [email_trip_summary(trip) for trip in trips]


@shared_task
def refresh_trackers():
    return list(map(pull_tracker, Vehicle.objects.exclude(tracker_id=None)))


@shared_task
def sync_positions():
    last_id = cache.get("sync_positions:last_id", 0)
    positions = Position.objects.filter(id__gt=last_id).order_by("id")[:1000]
    for position in positions:
        requests.post("https://warehouse.example/positions", json={"id": position.pk, "lat": position.lat}, timeout=5)
        cache.set("sync_positions:last_id", position.pk, None)


@shared_task
def reindex_vehicles(offset=0):
    vehicles = list(Vehicle.objects.order_by("id")[offset:offset + 200])
    for vehicle in vehicles:
        requests.put(f"https://search.example/vehicles/{vehicle.pk}", json={"plate": vehicle.plate}, timeout=5)
    if len(vehicles) == 200:
        reindex_vehicles.apply_async(args=(offset + 200,))


@shared_task
def build_fleet_report(tenant_id):
    report = {}
    for vehicle in Vehicle.objects.filter(tenant_id=tenant_id):
        report[vehicle.plate] = vehicle.trips.aggregate(km=Sum("distance_m"))["km"] or 0
    return report


@shared_task
def vehicle_summary(vehicle_id):
    trips = Trip.objects.filter(vehicle_id=vehicle_id)
    return {"trips": trips.count(), "meters": trips.aggregate(m=Sum("distance_m"))["m"] or 0}


@shared_task
def send_trip_receipt(trip_id):
    trip = Trip.objects.select_related("driver").get(pk=trip_id)
    email_trip_summary(trip)


@shared_task
def close_idle_trips():
    cutoff = timezone.now() - timezone.timedelta(hours=12)
    Trip.objects.filter(ended_at__isnull=True, started_at__lt=cutoff).update(ended_at=timezone.now())


@shared_task
def refresh_fx_rate():
    answer = requests.get("https://fx.example/latest/EUR", timeout=5)
    cache.set("fx:EUR", answer.json()["rate"], 3600)


@shared_task(soft_time_limit=30)
def backfill_photo_hashes(photo_ids):
    s3 = boto3.client("s3")
    for photo in Photo.objects.filter(pk__in=photo_ids, sha256=""):
        body = s3.get_object(Bucket="fleet-photos", Key=photo.key)["Body"].read()
        Photo.objects.filter(pk=photo.pk).update(sha256=hashlib.sha256(body).hexdigest())

