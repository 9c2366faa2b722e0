from celery import group, shared_task

from kitsune.customercare.models import SupportTicket
from kitsune.customercare.zendesk import sync_ticket_from_zendesk


@shared_task
def sync_support_ticket(ticket_id: int) -> None:
    """One ticket per task, so one failing ticket gets its own retries."""
    try:
        ticket = SupportTicket.objects.syncable().get(id=ticket_id)
    except SupportTicket.DoesNotExist:
        return
    sync_ticket_from_zendesk(ticket)


@shared_task
def sync_active_support_tickets() -> None:
    """Dispatch sync sub-tasks for all locally active Zendesk tickets."""
    ticket_ids = SupportTicket.objects.active().syncable().values_list("id", flat=True)
    group(sync_support_ticket.s(ticket_id) for ticket_id in ticket_ids).delay()
