from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseForbidden

from pontoon.base.models import Project
from pontoon.base.utils import require_AJAX
from pontoon.sync.tasks import sync_project_task


@login_required(redirect_field_name="", login_url="/403")
@require_AJAX
def manually_sync_project(request, slug):
    if not request.user.has_perm("base.can_manage_project") or not settings.MANUAL_SYNC:
        return HttpResponseForbidden("Forbidden: You don't have permission for syncing projects")

    project = Project.objects.get(slug=slug)
    sync_project_task.delay(project.pk)

    return HttpResponse("ok")
