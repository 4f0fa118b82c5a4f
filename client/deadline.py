"""A deadline for a whole HTTP exchange: the answer's head and body, however a server trickles.

A socket timeout bounds each receive, not their sum: a server sending a byte of its headers
every few seconds would hold the respondent's command for ever. Within `Deadline(at)`, every
connection of a `DeadlineAdapter` tells the deadline which socket it is reading its answer
from, and a timer shuts that socket down when the time is up, which ends the blocked read.
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_current = threading.local()


class Deadline:
    """Within the block, reading an answer ends at `at` (a time.monotonic() value)."""

    def __init__(self, at: float) -> None:
        self.at = at
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._timer: threading.Timer | None = None

    @property
    def expired(self) -> bool:
        """Whether the time is up."""
        return time.monotonic() >= self.at

    def watch(self, sock: socket.socket | None) -> None:
        """Read from `sock` from now on (shut at once when the time is already up)."""
        with self._lock:
            self._sock = sock
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            _shut(self._sock)

    def __enter__(self) -> Deadline:
        self._timer = threading.Timer(max(0.0, self.at - time.monotonic()), self._expire)
        self._timer.daemon = True
        self._timer.start()
        _current.deadline = self
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _current.deadline = None
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._sock = None


def _shut(sock: socket.socket | None) -> None:
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed
            pass


class _Watched:
    """A urllib3 connection that hands its socket to the thread's Deadline before reading."""

    sock: socket.socket | None

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        deadline = getattr(_current, "deadline", None)
        if deadline is not None:
            deadline.watch(self.sock)
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


class _HTTPConnection(_Watched, HTTPConnection):
    pass


class _HTTPSConnection(_Watched, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOLS = {"http": _HTTPPool, "https": _HTTPSPool}


class DeadlineAdapter(HTTPAdapter):
    """requests' adapter whose connections keep to the Deadline they are used within."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if hasattr(manager, "pool_classes_by_scheme"):
            manager.pool_classes_by_scheme = _POOLS
        return manager
