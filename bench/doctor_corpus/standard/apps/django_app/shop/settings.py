SECRET_KEY = "corpus"
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "shop"]
CELERY_BROKER_URL = "redis://localhost:6379/0"
CELERY_TASK_TIME_LIMIT = 60
CELERY_TASK_SOFT_TIME_LIMIT = 50
CELERY_TASK_ACKS_LATE = True
