import datetime

import requests
from django.contrib.auth.decorators import login_required
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.views import View
from django.views.decorators.http import require_POST

from clinic.models import Appointment, Clinic, Patient
from clinic.services import send_reminder
from clinic.tasks import rebuild_clinic_ledger


@require_POST
@login_required
def remind_today(request, clinic_id):
    today = datetime.date.today()
    booked = Appointment.objects.filter(clinic_id=clinic_id, day=today).select_related("patient")
    for appointment in booked:
        send_reminder(appointment)
    return redirect("clinic-day", clinic_id=clinic_id)


class ClinicStatsView(View):
    def get(self, request, clinic_id):
        balances = [p.outstanding_balance() for p in Patient.objects.filter(clinic_id=clinic_id)]
        return JsonResponse({"patients": len(balances), "owed": float(sum(balances))})


@login_required
def export_invoices_now(request, clinic_id):
    clinic = get_object_or_404(Clinic, pk=clinic_id)
    for invoice in clinic.invoices.all():
        default_storage.save(f"exports/{clinic_id}/{invoice.pk}.html", ContentFile(invoice.render_pdf()))
    return HttpResponse("done")


@login_required
def ledger_now(request, clinic_id):
    rebuild_clinic_ledger.apply_async(args=(clinic_id,)).get()
    return redirect("clinic-ledger", clinic_id=clinic_id)


@require_POST
def start_export(request, clinic_id):
    export = get_object_or_404(Clinic, pk=clinic_id).start_invoice_export()
    return JsonResponse({"export": export.pk, "state": export.state}, status=202)


@require_POST
def book(request, clinic_id):
    appointment = Appointment.objects.create(
        clinic_id=clinic_id,
        patient_id=request.POST["patient"],
        day=datetime.date.fromisoformat(request.POST["day"]),
    )
    return redirect("appointment", pk=appointment.pk)


@require_POST
def cancel_day(request, clinic_id):
    day = datetime.date.fromisoformat(request.POST["day"])
    Appointment.objects.filter(clinic_id=clinic_id, day=day).update(status="cancelled")
    return redirect("clinic-day", clinic_id=clinic_id)


def insurer_status(request, insurer_code):
    answer = requests.get(f"https://insurers.example/{insurer_code}/status", timeout=3)
    return JsonResponse({"up": answer.ok})


@require_POST
def start_ledger_rebuild(request, clinic_id):
    rebuild_clinic_ledger.delay(clinic_id)
    return JsonResponse({"state": "started"}, status=202)
