SECRET_KEY = "check2"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "rest_framework",
    "fleet",
]
ROOT_URLCONF = "fleet.urls"
CELERY_BROKER_URL = "redis://localhost:6379/3"
CELERY_RESULT_BACKEND = "redis://localhost:6379/4"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_TIME_LIMIT = 120
CELERY_TASK_SOFT_TIME_LIMIT = 100
CELERY_TASK_ROUTES = {"fleet.tasks.export_trip_range": {"queue": "exports"}}
ROUTING_URL = "https://routing.example/v2/route"
GEOCODER_URL = "https://geo.example/reverse"
