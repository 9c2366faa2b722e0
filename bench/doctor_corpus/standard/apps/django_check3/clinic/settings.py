SECRET_KEY = "corpus"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "rest_framework",
    "clinic",
]
CELERY_BROKER_URL = "redis://localhost:6379/3"
CELERY_TASK_TIME_LIMIT = 45
CELERY_TASK_SOFT_TIME_LIMIT = 40
CELERY_TASK_ACKS_LATE = True
