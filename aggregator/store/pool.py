"""A small pool of stores per process, lent one per app context (request or CLI command).

Nothing is opened until first use, so a server may fork workers after loading the app; stores
made in another process (another pid) are never reused. The schema is migrated once per
process, on first use. Reusing connections matters with werkzeug's server, which runs every
request on a new thread. Lending a store to Flask's app context is aggregator/web/db.py's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from deniable.aggregator.store.base import Store, open_store

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
