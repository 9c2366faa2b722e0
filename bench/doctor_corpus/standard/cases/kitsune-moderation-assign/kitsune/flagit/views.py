from django.contrib.auth.decorators import login_required
from django.db.models.functions import Now
from django.http import HttpResponseBadRequest, HttpResponseForbidden
from django.shortcuts import render

from kitsune.flagit.models import FlaggedObject
from kitsune.sumo.utils import paginate


@login_required
def moderate_content(request):
    """Staff assign themselves the next flagged objects, or give back their own."""
    assignee = request.GET.get("assignee")
    objects = FlaggedObject.objects.filter(
        reason=FlaggedObject.REASON_CONTENT_MODERATION, status=FlaggedObject.FLAG_PENDING
    ).select_related("content_type", "creator", "assignee")

    if request.method == "POST":
        if not (assignee and request.user.username == assignee):
            return HttpResponseForbidden()
        action = request.POST.get("action")
        if action not in ("assign", "unassign"):
            return HttpResponseBadRequest()
        if action == "assign":
            assignment_qs = objects.filter(assignee__isnull=True)[:20].values_list("id", flat=True)
            objects.filter(id__in=assignment_qs).update(
                assignee=request.user, assigned_timestamp=Now()
            )
        else:
            objects.filter(assignee=request.user).update(assignee=None, assigned_timestamp=None)

    if assignee:
        objects = objects.filter(assignee__username=assignee)
    return render(request, "flagit/content_moderation.html", {"objects": paginate(request, objects)})
