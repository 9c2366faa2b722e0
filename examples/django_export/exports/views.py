"""Start an export (answers 202 at once), watch its progress as JSON, download the CSV."""

from __future__ import annotations

import json

from django.db import connection, transaction
from django.db.models import F
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from exports import jobs
from exports.models import Account, Export


class NoCredits(Exception):
    pass


def create_export(account_id: int, lo: int, hi: int) -> Export:
    """Call inside `transaction.atomic()`: the row, the job and the charge commit together."""
    export = Export.objects.create(account_id=account_id, lo=lo, hi=hi)
    # Django's own DB-API connection (sqlite3 or psycopg), in the atomic block's transaction
    jobs.start_export.options(conn=connection.connection).dispatch(export.id)
    # the last step may still fail: then the rollback takes the row *and the job* with it
    charged = Account.objects.filter(id=account_id, export_credits__gt=0).update(
        export_credits=F("export_credits") - 1
    )
    if not charged:
        raise NoCredits(f"account {account_id} has no export credits left")
    return export


@csrf_exempt  # an API for the example; a real form posts with its CSRF token
@require_POST
def start(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    try:
        with transaction.atomic():
            export = create_export(int(body["account_id"]), int(body["lo"]), int(body["hi"]))
    except NoCredits as exc:
        return JsonResponse({"error": str(exc)}, status=402)
    return JsonResponse({"id": export.id, "progress_url": f"/exports/{export.id}/"}, status=202)


@require_GET
def progress(request: HttpRequest, export_id: str) -> JsonResponse:
    export = Export.objects.filter(id=export_id).first()
    if export is None:
        return JsonResponse({"error": f"no export {export_id}"}, status=404)
    out: dict[str, object] = {
        "id": export.id,
        "status": export.status,
        "progress": 0.0,
        "rows": export.rows,
    }
    if export.batch_id is not None:
        batch = jobs.app.get_batch(export.batch_id)  # declared total: never goes backwards
        out.update(
            batch_id=export.batch_id,
            batch_state=batch.state,
            progress=batch.progress,
            done=batch.done,
            total=batch.total,
        )
    if export.status == "done":
        out["download_url"] = f"/exports/{export.id}/csv"
    return JsonResponse(out)


@require_GET
def download(request: HttpRequest, export_id: str) -> HttpResponse:
    export = Export.objects.filter(id=export_id, status="done").first()
    if export is None:
        return JsonResponse({"error": f"export {export_id} is not ready"}, status=404)
    return HttpResponse(export.csv, content_type="text/csv")
