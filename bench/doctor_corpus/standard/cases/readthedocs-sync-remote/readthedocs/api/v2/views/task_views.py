from django.urls import reverse
from rest_framework import decorators, permissions
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from readthedocs.oauth import tasks


@decorators.api_view(["POST"])
@decorators.permission_classes((permissions.IsAuthenticated,))
@decorators.renderer_classes((JSONRenderer,))
def sync_remote_repositories(request):
    """Trigger a re-sync of remote repositories for the user."""
    result = tasks.sync_remote_repositories.delay(user_id=request.user.id)
    task_id = result.task_id
    return Response(
        {"task_id": task_id, "url": reverse("api_job_status", kwargs={"task_id": task_id})}
    )
