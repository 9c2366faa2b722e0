import uuid

from django.db import models


def new_id() -> str:
    return uuid.uuid4().hex


class Customer(models.Model):
    name = models.TextField()
    email = models.TextField()


class Account(models.Model):
    export_credits = models.PositiveIntegerField(default=0)


class Export(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=new_id)
    account = models.ForeignKey(Account, on_delete=models.CASCADE)
    lo = models.PositiveIntegerField()
    hi = models.PositiveIntegerField()
    status = models.CharField(max_length=16, default="queued")  # queued | running | done
    batch_id = models.CharField(max_length=64, null=True)
    rows = models.PositiveIntegerField(null=True)
    csv = models.TextField(null=True)


class ExportLine(models.Model):
    """One line per exported customer, keyed by batch: a re-run of a range adds nothing."""

    batch_id = models.CharField(max_length=64)
    customer_id = models.PositiveIntegerField()
    line = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch_id", "customer_id"], name="one_line_each")
        ]
