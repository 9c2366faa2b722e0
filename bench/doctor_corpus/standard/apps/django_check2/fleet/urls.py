from django.urls import include, path
from rest_framework.routers import DefaultRouter

from fleet import api, views

router = DefaultRouter()
router.register("vehicles", api.VehicleViewSet, basename="vehicle")
router.register("exports", api.TripExportViewSet)

urlpatterns = [
    path("api/", include(router.urls)),
    path("api/trips/<int:trip_id>/positions/", api.push_positions),
    path("tenants/<int:tenant_id>/summaries/", views.resend_trip_summaries),
    path("trips/<int:trip_id>/thumbnails/", views.regenerate_thumbnails),
    path("tenants/<int:tenant_id>/webhook/", views.notify_webhook),
    path("where/", views.where_am_i),
    path("vehicles/<int:vehicle_id>/end-trips/", views.end_open_trips),
    path("tenants/<int:tenant_id>/overview/", views.fleet_overview),
    path("tenants/<int:tenant_id>/report/", views.fleet_report),
    path("tenants/<int:tenant_id>/export/", views.start_export),
    path("tenants/<int:tenant_id>/vehicles/", views.add_vehicle),
    path("tenants/<int:tenant_id>/vehicles.csv", views.VehicleCsvView.as_view()),
]
