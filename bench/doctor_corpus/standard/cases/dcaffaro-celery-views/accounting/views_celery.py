from celery.result import AsyncResult
from django.http import JsonResponse

from .tasks import demo_add


def start_task(request):
    task = demo_add.delay(40, 2)
    return JsonResponse({
        "task_id": task.id,
        "status": task.status,
    })


def task_status(request, task_id: str):
    res = AsyncResult(task_id)
    return JsonResponse({
        "task_id": task_id,
        "status": res.status,
        "result": res.result if res.ready() else None,
    })
