"""A FastAPI app that exports customers as a tenure batch of small jobs."""
