import boto3
import requests
from django.conf import settings
from django.db import models
from django.db.models import F


class Tenant(models.Model):
    name = models.CharField(max_length=100)
    webhook_url = models.URLField(blank=True)

    def start_trip_export(self):
        from fleet.tasks import plan_trip_export

        export = TripExport.objects.create(tenant=self, state="running")
        result = plan_trip_export.apply_async((export.pk,), queue="exports")
        TripExport.objects.filter(pk=export.pk).update(task_id=result.id)
        return export


class Driver(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="drivers")
    email = models.EmailField()
    active = models.BooleanField(default=True)
    score = models.FloatField(default=0)

    def recompute_score(self):
        trips = self.trips.filter(ended_at__isnull=False)
        harsh = sum(t.harsh_events for t in trips)
        self.score = max(0.0, 100.0 - harsh)
        self.save(update_fields=["score"])


class Vehicle(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="vehicles")
    plate = models.CharField(max_length=20)
    status = models.CharField(max_length=20, default="active")
    tracker_id = models.CharField(max_length=40, null=True)
    archived = models.BooleanField(default=False)


class Trip(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="trips")
    vehicle = models.ForeignKey(Vehicle, on_delete=models.CASCADE, related_name="trips")
    driver = models.ForeignKey(Driver, on_delete=models.CASCADE, related_name="trips")
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True)
    distance_m = models.IntegerField(default=0)
    distance_km = models.FloatField(null=True)
    harsh_events = models.IntegerField(default=0)
    end_address = models.CharField(max_length=200, blank=True)

    def recompute_distance(self):
        points = list(self.positions.values_list("lat", "lon"))
        answer = requests.post(settings.ROUTING_URL, json={"points": points})
        self.distance_m = answer.json()["distance"]
        self.save(update_fields=["distance_m"])


class Position(models.Model):
    trip = models.ForeignKey(Trip, on_delete=models.CASCADE, related_name="positions")
    lat = models.FloatField()
    lon = models.FloatField()
    recorded_at = models.DateTimeField()


class Photo(models.Model):
    trip = models.ForeignKey(Trip, on_delete=models.CASCADE, related_name="photos")
    key = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64, blank=True)

    def make_thumbnail(self):
        s3 = boto3.client("s3")
        s3.copy_object(Bucket="fleet-thumbs", Key=self.key, CopySource={"Bucket": "fleet-photos", "Key": self.key})


class Status(models.Model):
    code = models.CharField(max_length=20, unique=True)


class TripExport(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    state = models.CharField(max_length=20)
    task_id = models.CharField(max_length=50, blank=True)
    group_id = models.CharField(max_length=50, blank=True)
    total = models.IntegerField(null=True)
    done = models.IntegerField(default=0)

    # Against the total the first coordinator recorded once, never the group's own count.
    def progress(self):
        if not self.total:
            return 0
        return min(100, self.done * 100 // self.total)

    def add_done(self, count):
        TripExport.objects.filter(pk=self.pk).update(done=F("done") + count)
