"""An open corpus of real Laravel and Celery projects, pinned by commit, with the findings a
careful reviewer writes by hand for each; `python -m bench doctor-corpus` scores the doctor
against it."""
