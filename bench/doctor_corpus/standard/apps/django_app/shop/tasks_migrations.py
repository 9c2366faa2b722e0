from celery import shared_task

from shop.models import Order


@shared_task
def recompute_totals_for(ids):
    """One small job per chunk of ids the migration selected."""
    for order in Order.objects.filter(id__in=ids):
        order.recompute_total()
        order.save(update_fields=["total"])
