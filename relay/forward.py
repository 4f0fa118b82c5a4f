"""Sending a batch on to the gateway: a few keep-alive connections taking the requests in the
batch's (shuffled) order, each request with its content type, its length and the batch's tag
only (no client address, cookie, user agent or any other header of the client's)."""

from __future__ import annotations

import http.client
import ssl
import threading
from collections.abc import Sequence
from urllib.parse import urlsplit

from deniable.relay.batches import Forwarded

REQUEST_TYPE = "message/ohttp-req"
#: The header that tags a request with its batch (docs/anonymity.md#running-a-relay).
BATCH_HEADER = "Deniable-Batch"
#: The most of a gateway's answer passed back (bytes): an encapsulated report result is small.
MAX_ANSWER = 1024 * 1024
_FAILED = "text/plain; charset=utf-8"


class GatewayForwarder:
    """Posts to one gateway URL (http or https) over one keep-alive connection."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the gateway must be an http(s) URL, got {url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self.path = (parts.path if parts.path not in ("", "/") else "/ohttp") + (
            f"?{parts.query}" if parts.query else ""
        )
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self.scheme == "https":
                self._conn = http.client.HTTPSConnection(
                    self.host, self.port, timeout=self.timeout, context=ssl.create_default_context()
                )
            else:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return self._conn

    def _post(self, body: bytes, tag: str) -> Forwarded:
        conn = self._connection()
        conn.putrequest("POST", self.path, skip_accept_encoding=True)
        conn.putheader("Content-Type", REQUEST_TYPE)
        conn.putheader("Content-Length", str(len(body)))
        conn.putheader(BATCH_HEADER, tag)
        conn.endheaders(body)
        response = conn.getresponse()
        data = response.read(MAX_ANSWER + 1)
        if len(data) > MAX_ANSWER:
            self.close()
            return Forwarded(502, _FAILED, b"the gateway's answer was too large")
        if response.will_close:
            self.close()
        return Forwarded(
            response.status,
            response.getheader("Content-Type") or "application/octet-stream",
            data,
            response.getheader("Retry-After"),
        )

    def post(self, body: bytes, tag: str) -> Forwarded:
        """One body posted, on a fresh connection once more if the first fails; a 502 when the
        gateway cannot be reached (its sender keeps the report and tries later)."""
        for attempt in (1, 2):
            try:
                return self._post(body, tag)
            except (OSError, http.client.HTTPException):
                self.close()
                if attempt == 2:
                    break
        return Forwarded(502, _FAILED, b"the relay could not reach the gateway")

    def close(self) -> None:
        """Drop the connection (the next request opens another)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class Forwarder:
    """Sends batches over `connections` keep-alive connections at once: the batch's requests
    are taken in its (shuffled) order by whichever connection is free, so the gateway can
    commit several together; none of it depends on who sent what."""

    def __init__(self, url: str, *, connections: int = 4, timeout: float = 30.0) -> None:
        self.lines = [GatewayForwarder(url, timeout=timeout) for _ in range(max(1, connections))]

    def send(self, bodies: Sequence[bytes], tag: str) -> list[Forwarded]:
        """Each body's answer, in the order given."""
        answers: list[Forwarded | None] = [None] * len(bodies)
        taken = iter(range(len(bodies)))
        lock = threading.Lock()

        def work(line: GatewayForwarder) -> None:
            while True:
                with lock:
                    i = next(taken, None)
                if i is None:
                    return
                answers[i] = line.post(bodies[i], tag)

        threads = [threading.Thread(target=work, args=(line,)) for line in self.lines[1:]]
        for thread in threads:
            thread.start()
        work(self.lines[0])
        for thread in threads:
            thread.join()
        return [a if a is not None else Forwarded(502, _FAILED, b"not sent") for a in answers]

    def close(self) -> None:
        """Drop every connection."""
        for line in self.lines:
            line.close()
