import datetime

from django.utils import timezone

from apps.mobile_app.models import FCMDevice
from apps.mobile_app.utils import send_push_notification
from apps.schedules.models import OnCallSchedule
from common.custom_celery_tasks import shared_dedicated_queue_retry_task


@shared_dedicated_queue_retry_task(autoretry_for=(Exception,), retry_backoff=True, max_retries=1)
def conditionally_send_going_oncall_push_notifications_for_schedule(schedule_pk) -> None:
    schedule = OnCallSchedule.objects.get(pk=schedule_pk)
    now = timezone.now()
    for schedule_event in schedule.final_events(now, now + datetime.timedelta(hours=12)):
        for user in schedule_event["users"]:
            device = FCMDevice.get_active_device_for_user(user)
            if device is not None:
                send_push_notification(device, schedule_event)


@shared_dedicated_queue_retry_task()
def conditionally_send_going_oncall_push_notifications_for_all_schedules() -> None:
    for schedule in OnCallSchedule.objects.filter(organization__deleted_at__isnull=True):
        conditionally_send_going_oncall_push_notifications_for_schedule.apply_async((schedule.pk,))
