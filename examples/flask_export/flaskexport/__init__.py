"""A Flask app that exports customers as a tenure batch, created in the request's transaction."""
