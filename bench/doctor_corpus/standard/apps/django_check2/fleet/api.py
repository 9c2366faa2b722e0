from celery.result import GroupResult
from django.utils import timezone
from rest_framework import serializers, viewsets
from rest_framework.decorators import action, api_view
from rest_framework.response import Response

from fleet.models import Position, TripExport, Vehicle
from fleet.tasks import vehicle_summary


class VehicleSerializer(serializers.ModelSerializer):
    class Meta:
        model = Vehicle
        fields = ["id", "plate", "status", "tracker_id"]


class VehicleViewSet(viewsets.ModelViewSet):
    serializer_class = VehicleSerializer

    def get_queryset(self):
        return Vehicle.objects.filter(tenant=self.request.user.tenant)

    def perform_create(self, serializer):
        serializer.save(tenant=self.request.user.tenant)

    @action(detail=False, methods=["post"])
    def archive_idle(self, request):
        cutoff = timezone.now() - timezone.timedelta(days=180)
        count = self.get_queryset().filter(status="idle", trips__started_at__lt=cutoff).update(archived=True)
        return Response({"archived": count})

    @action(detail=True)
    def summary(self, request, pk=None):
        result = vehicle_summary.apply_async((pk,))
        return Response(result.get(timeout=30))

    @action(detail=True, methods=["post"])
    def recompute_distances(self, request, pk=None):
        vehicle = self.get_object()
        for trip in vehicle.trips.all():
            trip.recompute_distance()
        return Response({"ok": True})


class TripExportViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = TripExport.objects.all()

    @action(detail=True)
    def progress(self, request, pk=None):
        export = self.get_object()
        return Response({"state": export.state, "progress": export.progress()})

    @action(detail=True)
    def live(self, request, pk=None):
        export = self.get_object()
        members = GroupResult.restore(export.group_id)
        done = members.completed_count() if members else 0
        return Response({"progress": int(done * 100 / len(members.results)) if members else 0})


@api_view(["POST"])
def push_positions(request, trip_id):
    rows = request.data.get("positions", [])[:500]
    Position.objects.bulk_create([Position(trip_id=trip_id, **row) for row in rows])
    return Response(status=201)
