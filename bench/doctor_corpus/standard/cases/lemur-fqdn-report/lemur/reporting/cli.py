import click
from flask.cli import with_appcontext
from tabulate import tabulate

from lemur.reporting.service import fqdns


@click.group(name="report", help="Reporting related tasks.")
@with_appcontext
def cli():
    pass


@cli.command("fqdn")
@click.option("-v", "--validity", "validity", default="all")
@click.option("-d", "--deployment", "deployment", default="all")
def fqdn_command(deployment, validity):
    fqdn(deployment, validity)


def fqdn(deployment, validity):
    """A report of the FQDNs covered by Lemur issued certificates."""
    rows = []
    for cert in fqdns(validity=validity, deployment=deployment).all():
        for domain in cert.domains:
            rows.append([domain.name, cert.issuer, cert.owner, cert.not_after])

    click.echo(tabulate(rows, headers=["FQDN", "Issuer", "Owner", "Validity End"]))
