"""A small pool of stores per process: one per app context (request or CLI command), reused.

Nothing is opened while the app is created, so a server may fork workers after loading it;
stores made in another process (another pid) are never reused. The schema is migrated once
per process, on first use. Reusing connections matters with werkzeug's server, which runs
every request on a new thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flask import Flask, current_app, g

from deniable.aggregator.store.base import Store, StoreError, open_store

EXTENSION = "deniable.stores"
POOL_SIZE = 16


class StoreProvider:
    """Lends stores for one app's configuration; each is used by one thread at a time."""

    def __init__(self, config: Mapping[str, Any]):
        self._config = config
        self._lock = threading.Lock()
        self._pool: list[Store] = []
        self._pid = os.getpid()
        self._migrated = False

    def checkout(self) -> Store:
        """A store for this thread's exclusive use until `checkin`."""
        with self._lock:
            if self._pid != os.getpid():  # forked: the parent's connections are not ours
                self._pool, self._pid, self._migrated = [], os.getpid(), False
            if self._pool:
                return self._pool.pop()
        store = open_store(self._config)
        if not self._migrated:
            with self._lock:
                if not self._migrated:
                    store.migrate()
                    self._migrated = True
        return store

    def checkin(self, store: Store) -> None:
        """Return a store to the pool (or close it when the pool is full)."""
        with self._lock:
            if self._pid == os.getpid() and len(self._pool) < POOL_SIZE:
                self._pool.append(store)
                return
        store.close()

    @contextmanager
    def borrowed(self) -> Iterator[Store]:
        """A store for the duration of a block (e.g. a streamed response that outlives its request)."""
        store = self.checkout()
        try:
            yield store
        finally:
            self.checkin(store)


def provider() -> StoreProvider:
    """The current app's store provider."""
    return current_app.extensions[EXTENSION]


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
    """Give the app its provider, and return each context's store when the context ends."""
    app.extensions[EXTENSION] = StoreProvider(app.config)

    @app.teardown_appcontext
    def _return_store(_: BaseException | None) -> None:
        store = g.pop("deniable_store", None)
        if store is not None:
            app.extensions[EXTENSION].checkin(store)
