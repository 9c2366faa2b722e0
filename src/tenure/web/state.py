"""What every dashboard request reaches: the App, the auth token, the rate meter, the doctor
runner and the templates, kept on the Starlette app's state by create_app."""

from __future__ import annotations

from dataclasses import dataclass

import jinja2
from starlette.requests import Request

from tenure.app import App
from tenure.web import views
from tenure.web.doctor_page import DoctorRunner

# `retry all` acts on at most this many failed jobs per request
RETRY_ALL_LIMIT = 100_000


def retry_all_failed(app: App) -> int:
    """The page's and the API's `retry all`: how many failed jobs went back to their queue."""
    return sum(1 for j in app.failed_jobs(limit=RETRY_ALL_LIMIT) if app.retry_failed(j.id))


@dataclass
class Dashboard:
    app: App
    auth_token: str | None
    meter: views.RateMeter
    doctor: DoctorRunner
    templates: jinja2.Environment


def dashboard(request: Request) -> Dashboard:
    dash: Dashboard = request.app.state.dashboard
    return dash
