import requests
from django.conf import settings
from django.core.mail import send_mail


def reverse_geocode(lat, lon):
    answer = requests.get(settings.GEOCODER_URL, params={"lat": lat, "lon": lon}, timeout=3)
    answer.raise_for_status()
    return answer.json()["address"]


def pull_tracker(vehicle):
    answer = requests.get(f"https://telematics.example/trackers/{vehicle.tracker_id}", timeout=10)
    vehicle.status = answer.json()["status"]
    vehicle.save(update_fields=["status"])
    return vehicle.status


def email_trip_summary(trip):
    send_mail(
        "Your trip",
        f"{trip.distance_m / 1000:.1f} km",
        "fleet@example.com",
        [trip.driver.email],
    )
