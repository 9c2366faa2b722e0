from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"

    def ready(self) -> None:
        from exports.jobs import app

        # tenure's tables, on tenure's own connection, before the first request: a `conn=`
        # dispatch then only writes inside the request's transaction (on SQLite, creating
        # them from inside it would find the file locked by that very transaction)
        app.store.migrate()
