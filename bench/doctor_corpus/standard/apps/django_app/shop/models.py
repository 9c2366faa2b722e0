from celery import chord
from django.core.mail import send_mail
from django.db import models


class Project(models.Model):
    name = models.CharField(max_length=200)

    def start_order_export(self):
        from shop.tasks import finish_export, plan_order_export

        export = OrderExport.objects.create(project=self)
        chord([plan_order_export.si(self.pk, export.pk)])(finish_export.si(export.pk))
        return export


class Customer(models.Model):
    project = models.ForeignKey(Project, related_name="customers", on_delete=models.CASCADE)
    email = models.EmailField()
    crm_id = models.CharField(max_length=64)

    def notify(self, subject, body):
        send_mail(subject, body, None, [self.email])


class Order(models.Model):
    project = models.ForeignKey(Project, related_name="orders", on_delete=models.CASCADE)
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE)
    number = models.CharField(max_length=32)
    slug = models.SlugField(blank=True)
    status = models.CharField(max_length=16)
    total = models.DecimalField(max_digits=12, decimal_places=2, default=0)
    archived = models.BooleanField(default=False)

    def recompute_total(self):
        self.total = sum(line.amount for line in self.lines.all())


class OrderExport(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE)
    total_orders = models.IntegerField(null=True)
    exported_orders = models.IntegerField(default=0)
    finished = models.BooleanField(default=False)

    def progress(self):
        if not self.total_orders:
            return 0
        return 100 * self.exported_orders // self.total_orders


class Invoice(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE)
    number = models.CharField(max_length=32)
