"""Flask-aware storage: the app's store pool and survey cache, and a store per app context.

Like Flask's tutorial `db.py`: a request or CLI command borrows a store from the app's
`StoreProvider` on first use (`get_store`) and returns it when the app context ends. The
survey cache is the app's too (`survey_cache`), shared by its views, its report endpoint
and its commands.
"""

from __future__ import annotations

from pathlib import Path

from flask import Flask, current_app, g

from deniable.aggregator.store.base import Store, StoreError
from deniable.aggregator.store.pool import StoreProvider
from deniable.aggregator.store.survey_cache import SurveyCache

#: Where the app keeps its StoreProvider and its SurveyCache.
EXTENSION = "deniable.stores"
SURVEYS = "deniable.surveys"


def provider() -> StoreProvider:
    """The current app's store provider."""
    return current_app.extensions[EXTENSION]


def survey_cache() -> SurveyCache:
    """The current app's parsed surveys by hash."""
    return current_app.extensions[SURVEYS]


def get_store() -> Store:
    """The store of the current app context (a request or a CLI command), lent on first use."""
    if "deniable_store" not in g:
        g.deniable_store = provider().checkout()
    return g.deniable_store


def existing_store(survey: str | None = None) -> Store:
    """get_store() for a command that reads or maintains a database (about `survey`, if given):
    StoreError when the SQLite file is missing, so a mistyped DENIABLE_DATA_DIR does not
    become a new, empty database."""
    if not current_app.config.get("DATABASE_URL"):
        from deniable.aggregator.store.sqlite import DB_FILE

        path = Path(current_app.config["DATA_DIR"]) / DB_FILE
        if not path.is_file():
            about = f"no survey {survey!r} on this aggregator: " if survey else ""
            raise StoreError(
                f"{about}no database at {path}; check DENIABLE_DATA_DIR (or run "
                "`deniable-aggregator init-db` to create one there)"
            )
    return get_store()


def init_app(app: Flask) -> None:
    """Give the app its store provider and survey cache, and return each context's store when
    the context ends."""
    app.extensions[EXTENSION] = StoreProvider(app.config)
    app.extensions[SURVEYS] = SurveyCache()

    @app.teardown_appcontext
    def _return_store(_: BaseException | None) -> None:
        store = g.pop("deniable_store", None)
        if store is not None:
            app.extensions[EXTENSION].checkin(store)
