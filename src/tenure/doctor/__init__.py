"""`tenure doctor`: the four clocks (client call < job timeout < worker grace < platform grace)
read together from job code, worker options, deployment files and the store's history."""

from tenure.doctor.engine import CannotRun, diagnose
from tenure.doctor.model import Finding, Report

__all__ = ["CannotRun", "Finding", "Report", "diagnose"]
