import logging

from datahub.core.queues.job_scheduler import job_scheduler
from datahub.investment.project.models import GVAMultiplier, InvestmentProject

logger = logging.getLogger(__name__)
LONG_RUNNING_QUEUE = "long-running"
HALF_DAY_IN_SECONDS = 43200


def update_investment_projects_for_gva_multiplier_task(gva_multiplier_id):
    """Update the gross value added of the projects of one GVA multiplier."""
    try:
        instance = GVAMultiplier.objects.get(id=gva_multiplier_id)
    except GVAMultiplier.DoesNotExist:
        logger.warning(f"Unable to find GVA Multiplier [{gva_multiplier_id}]")
    else:
        for investment_project in instance.investment_projects.all().iterator():
            investment_project.save(update_fields=["gross_value_added"])


def schedule_refresh_gross_value_added_value_for_fdi_investment_projects():
    return job_scheduler(
        queue_name=LONG_RUNNING_QUEUE,
        function=refresh_gross_value_added_value_for_fdi_investment_projects,
        job_timeout=HALF_DAY_IN_SECONDS,
    )


def refresh_gross_value_added_value_for_fdi_investment_projects():
    """Save every FDI project: its pre_save signal recomputes the gross value added."""
    investment_projects = InvestmentProject.objects.filter(investment_type_id=1)
    processed_ids = set()
    for project in investment_projects.iterator():
        if project.id in processed_ids:
            continue
        project.save(update_fields=["gross_value_added", "gva_multiplier"])
        processed_ids.add(project.id)
