from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from shop.models import OrderExport, Project


class ProjectViewSet(viewsets.ModelViewSet):
    queryset = Project.objects.all()

    @action(detail=True, methods=["post"])
    def notify_customers(self, request, pk=None):
        project = self.get_object()
        for customer in project.customers.all():
            customer.notify("News", request.data["message"])
        return Response(status=204)

    @action(detail=True, methods=["get"])
    def export_progress(self, request, pk=None):
        export = OrderExport.objects.filter(project_id=pk).latest("pk")
        return Response({"progress": export.progress(), "finished": export.finished})
