from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.mail import EmailMessage
from django.db import models
from django.db.models import Sum
from django.template.loader import render_to_string


class Clinic(models.Model):
    name = models.CharField(max_length=120)

    def start_invoice_export(self):
        """The model starts the work: one record, one coordinator, and returns."""
        from clinic.tasks import plan_invoice_export

        export = InvoiceExport.objects.create(clinic=self, state="running")
        plan_invoice_export.apply_async((self.pk, export.pk), queue="exports")
        return export


class Patient(models.Model):
    clinic = models.ForeignKey(Clinic, related_name="patients", on_delete=models.CASCADE)
    full_name = models.CharField(max_length=200, blank=True)
    first_name = models.CharField(max_length=100)
    last_name = models.CharField(max_length=100)
    email = models.EmailField()
    phone = models.CharField(max_length=30, blank=True)
    last_lab = models.CharField(max_length=50, blank=True)
    insurer_code = models.CharField(max_length=20, blank=True)
    country = models.CharField(max_length=2, blank=True)
    wants_digest = models.BooleanField(default=False)

    def outstanding_balance(self):
        return self.invoices.filter(paid=False).aggregate(total=Sum("amount"))["total"] or 0


class Appointment(models.Model):
    clinic = models.ForeignKey(Clinic, on_delete=models.CASCADE)
    patient = models.ForeignKey(Patient, on_delete=models.CASCADE)
    day = models.DateField()
    status = models.CharField(max_length=20, default="booked")


class Invoice(models.Model):
    clinic = models.ForeignKey(Clinic, related_name="invoices", on_delete=models.CASCADE)
    patient = models.ForeignKey(Patient, related_name="invoices", on_delete=models.CASCADE)
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    paid = models.BooleanField(default=False)
    status = models.CharField(max_length=20, default="open")
    created = models.DateTimeField(auto_now_add=True)

    def render_pdf(self):
        return render_to_string("invoice.html", {"invoice": self}).encode()

    def store_pdf(self):
        default_storage.save(f"invoices/{self.clinic_id}/{self.pk}.html", ContentFile(self.render_pdf()))

    def send_pdf(self):
        message = EmailMessage("Your invoice", "Attached.", to=[self.patient.email])
        message.attach(f"invoice-{self.pk}.html", self.render_pdf(), "text/html")
        message.send()


class InvoiceExport(models.Model):
    clinic = models.ForeignKey(Clinic, on_delete=models.CASCADE)
    state = models.CharField(max_length=20)
    total_invoices = models.IntegerField(null=True)
    exported_invoices = models.IntegerField(default=0)

    def progress(self):
        if not self.total_invoices:
            return 0
        return min(100, 100 * self.exported_invoices // self.total_invoices)


class SyncState(models.Model):
    name = models.CharField(max_length=50, unique=True)
    last_id = models.BigIntegerField(default=0)


class Hold(models.Model):
    expires_at = models.DateTimeField()


class Specialty(models.Model):
    code = models.CharField(max_length=10)
    label = models.CharField(max_length=80)
