import requests
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from clinic.models import InvoiceExport, Patient
from clinic.services import check_coverage
from clinic.tasks import send_daily_digest


class PatientSerializer(serializers.ModelSerializer):
    class Meta:
        model = Patient
        fields = ["id", "first_name", "last_name", "email", "insurer_code"]


class PatientViewSet(viewsets.ModelViewSet):
    serializer_class = PatientSerializer
    queryset = Patient.objects.all()

    def perform_create(self, serializer):
        serializer.save(clinic=self.request.user.clinic)

    @action(detail=True, methods=["post"])
    def resync(self, request, pk=None):
        patient = self.get_object()
        record = requests.get(f"https://registry.example/patients/{patient.pk}").json()
        patient.email = record["email"]
        patient.save(update_fields=["email"])
        return Response({"email": patient.email})

    @action(detail=True, methods=["get"])
    def coverage(self, request, pk=None):
        patient = self.get_object()
        return Response(check_coverage(patient.insurer_code, patient.pk))


class DigestPreviewView(APIView):
    def post(self, request):
        sent = send_daily_digest.delay().get(timeout=60)
        return Response({"sent": sent})


class ExportProgressView(APIView):
    def get(self, request, pk):
        export = InvoiceExport.objects.get(pk=pk)
        return Response({"state": export.state, "progress": export.progress()})
