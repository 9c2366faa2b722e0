from collections import defaultdict

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_POST
from notifications.signals import notify

from pontoon.base.models import Comment, Locale, Translation
from pontoon.base.utils import human_users


def _send_pin_comment_notifications(user, comment):
    recipient_data = defaultdict(list)
    entity = comment.entity
    for t in Translation.objects.filter(entity=entity):
        for u in (t.user, t.approved_user, t.rejected_user):
            if u:
                recipient_data[u.pk].append(t.locale.pk)

    for recipient in human_users().filter(pk__in=recipient_data.keys()).exclude(pk=user.pk):
        for locale in Locale.objects.filter(pk__in=recipient_data[recipient.pk]):
            notify.send(
                user,
                recipient=recipient,
                verb="has pinned a comment in",
                action_object=locale,
                target=entity,
                description=comment.content,
            )


@require_POST
@login_required
def pin_comment(request):
    comment = get_object_or_404(Comment, pk=request.POST.get("comment_id"))
    comment.pinned = True
    comment.save()
    _send_pin_comment_notifications(request.user, comment)
    return JsonResponse({"status": True})


@require_POST
@login_required
def unpin_comment(request):
    comment = get_object_or_404(Comment, pk=request.POST.get("comment_id"))
    comment.pinned = False
    comment.save()
    return JsonResponse({"status": True})
