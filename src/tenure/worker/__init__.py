"""The worker: a supervisor process that reserves jobs and runs each attempt where it can be
timed, measured and killed without the worker itself dying of a job.

Nothing is imported here on purpose: `python -m tenure.worker.child` must not find its own
module already imported by the package.
"""
