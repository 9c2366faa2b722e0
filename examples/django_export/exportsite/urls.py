from django.urls import path
from exports import views

urlpatterns = [
    path("exports/", views.start),
    path("exports/<str:export_id>/", views.progress),
    path("exports/<str:export_id>/csv", views.download),
]
