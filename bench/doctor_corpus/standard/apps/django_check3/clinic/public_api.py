"""The patients' portal API (FastAPI), served beside the Django site."""

import httpx
from fastapi import FastAPI
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from clinic.portal_models import Visit

api = FastAPI()
engine = create_engine("postgresql://localhost/clinic")


@api.post("/patients/{patient_id}/visits/share")
def share_visits(patient_id: int):
    with Session(engine) as session:
        visits = session.scalars(select(Visit).where(Visit.patient_id == patient_id))
        for visit in visits:
            httpx.post("https://gp-portal.example/visits", json=visit.as_dict(), timeout=10)
    return {"shared": True}


@api.get("/patients/{patient_id}/visits/{visit_id}")
def read_visit(patient_id: int, visit_id: int):
    with Session(engine) as session:
        visit = session.get(Visit, visit_id)
        return visit.as_dict() if visit and visit.patient_id == patient_id else {}
