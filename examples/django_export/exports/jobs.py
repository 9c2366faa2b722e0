"""The export as a batch of small jobs: `start_export` plans it with `app.batch_over_ids`, one
`export_rows(lo, hi)` per 50 customers, and `finish_export` builds the CSV at the end."""

from __future__ import annotations

from django.conf import settings

import tenure
from exports.models import Customer, Export, ExportLine

app = tenure.App(settings.TENURE_URL)

CHUNK = 50  # customers per small job
SLICE = 8  # ranges a coordinator adds before chaining the next one


@app.job(timeout=30, tries=5, backoff=[1, 5, 30])
def start_export(export_id: str) -> None:
    """Runs only if the request committed: the job was enqueued in its transaction."""
    export = Export.objects.get(id=export_id)
    if export.batch_id is not None:
        return  # a re-run after a crash: planned already
    batch = app.batch_over_ids(
        export_rows,
        export.lo,
        export.hi,
        chunk=CHUNK,
        slice_jobs=SLICE,
        name=f"export {export_id}",
        then=finish_export.sig(export_id),
    )
    Export.objects.filter(id=export_id).update(batch_id=batch.id, status="running")


@app.job(timeout=30)
def export_rows(lo: int, hi: int) -> None:
    """One small, idempotent job: customers lo..hi become CSV lines of this batch."""
    batch = tenure.current().batch
    assert batch is not None, "export_rows runs as a member of an export batch"
    ExportLine.objects.bulk_create(
        [
            ExportLine(batch_id=batch.id, customer_id=c.id, line=f"{c.id},{c.name},{c.email}")
            for c in Customer.objects.filter(id__range=(lo, hi)).order_by("id")
        ],
        ignore_conflicts=True,
    )


@app.job(timeout=30)
def finish_export(export_id: str) -> None:
    """The batch's `then` callback (idempotent)."""
    export = Export.objects.get(id=export_id)
    if export.batch_id is None or app.get_batch(export.batch_id).state != "succeeded":
        return  # the callback of a batch this export does not record: nothing to do
    lines = ExportLine.objects.filter(batch_id=export.batch_id).order_by("customer_id")
    csv = "id,name,email\n" + "".join(f"{line.line}\n" for line in lines)
    Export.objects.filter(id=export_id).update(status="done", rows=len(lines), csv=csv)
