import celery
from django.contrib.auth import get_user_model

from main.celery import app
from main.utils import chunks
from openedx import api

User = get_user_model()


@app.task(bind=True)
def repair_faulty_openedx_users_parallel(self):
    """Repair a set of users in parallel."""
    chunked_tasks = [
        repair_faulty_openedx_users_chunk.s(list(user_ids))
        for user_ids in chunks(
            User.faulty_openedx_users.user_ids_with_grace_period(),
            chunk_size=1000,
        )
    ]
    raise self.replace(celery.group(chunked_tasks))


@app.task(acks_late=True)
def repair_faulty_openedx_users_chunk(user_ids):
    """Repair one chunk of users."""
    for user in User.objects.filter(id__in=user_ids):
        api.repair_faulty_openedx_user(user)
