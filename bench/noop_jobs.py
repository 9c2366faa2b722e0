"""No-op jobs for the benchmarks; the store URL comes from $TENURE_URL."""

import tenure

app = tenure.App()


@app.job(timeout=30)
def noop(n: int) -> None:
    pass
