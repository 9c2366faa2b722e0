"""`tenure doctor --celery MODULE:ATTR|PATH`: a Celery app's settings against its broker's lease.

Kept free of imports: tenure.doctor.rules reads the rule index from celery/index.py.
"""
