from celery.result import AsyncResult
from django.http import JsonResponse

from myproject.celery import debug_task


def view_data(request, **kwargs):
    """Fetch the data of one category through the worker and return it."""
    url = "__enterurlhere__"
    data = debug_task.delay(url, kwargs["catagory"], kwargs["value"])
    result = AsyncResult(data.id)
    return JsonResponse(result.get())
