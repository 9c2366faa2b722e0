from django.contrib.auth.decorators import login_required
from django.http import HttpResponseBadRequest, HttpResponseRedirect
from django.views.decorators.http import require_POST

from kitsune.gallery.forms import ImageForm
from kitsune.gallery.tasks import compress_image, generate_thumbnail
from kitsune.gallery.utils import get_draft


@login_required
@require_POST
def upload(request):
    """Finalizes an uploaded draft."""
    draft = get_draft(request.user)
    if draft:
        image_form = ImageForm(request.POST, request.FILES, instance=draft)
        if image_form.is_valid():
            img = image_form.save(is_draft=None)
            generate_thumbnail.delay("gallery.Image", img.id, "file", "thumbnail")
            compress_image.delay("gallery.Image", img.id, "file")
            return HttpResponseRedirect(img.get_absolute_url())
    return HttpResponseBadRequest("Unrecognized POST request.")
