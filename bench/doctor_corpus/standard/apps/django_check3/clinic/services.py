import requests
from django.conf import settings

SMS_URL = "https://sms.example/api/messages"


def send_reminder(appointment):
    """One SMS for one appointment."""
    requests.post(
        SMS_URL,
        json={"to": appointment.patient.phone, "text": f"See you on {appointment.day:%d %b}"},
        headers={"Authorization": f"Bearer {settings.SMS_TOKEN}"},
        timeout=5,
    )


def check_coverage(insurer_code, patient_number):
    response = requests.get(
        f"https://insurers.example/{insurer_code}/coverage/{patient_number}", timeout=(2, 3)
    )
    response.raise_for_status()
    return response.json()
