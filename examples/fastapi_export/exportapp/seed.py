"""`python -m exportapp.seed [CUSTOMERS]`: the tables, customers 1..N and account 1."""

from __future__ import annotations

import sys

from exportapp import db
from exportapp.jobs import app, migrate

if __name__ == "__main__":
    customers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    migrate()
    db.seed(app.url, customers=customers, credits=10)
    print(f"{app.url}: {customers} customers, account 1 with 10 export credits")
