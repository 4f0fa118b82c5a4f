"""A fault-injecting front for end-to-end tests: a tiny HTTP proxy before a real aggregator that
answers the first report POSTs with the faults it is given, then passes everything through."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

REPORTS = "/api/v1/reports"
#: Headers that belong to one connection, not to the answer passed on.
#: Headers a hop sets for itself. Host is passed on, as a reverse proxy does, so a page loaded
#: through the front names the front as its aggregator (data-aggregator) and posts through it.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


@dataclass(frozen=True)
class Fault:
    """One answer the front gives instead of the aggregator's."""

    status: int
    detail: str
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/problem+json"

    def body(self) -> bytes:
        return json.dumps(
            {"type": "about:blank", "status": self.status, "detail": self.detail}
        ).encode()


class FaultyFront:
    """Listens on a free loopback port (`url`) and forwards to `upstream`, except that the
    first POSTs of /api/v1/reports get `faults`, in order. `posts` lists the status each
    report POST was answered with (a fault's, or the aggregator's)."""

    def __init__(self, upstream: str, faults: Iterable[Fault]) -> None:
        self.faults = list(faults)
        self.posts: list[int] = []
        target = urlsplit(upstream)
        front = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def handle_any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.command == "POST" and self.path == REPORTS:
                    with lock:
                        fault = front.faults.pop(0) if front.faults else None
                        if fault is not None:
                            front.posts.append(fault.status)
                    if fault is not None:
                        self.answer(
                            fault.status,
                            [("Content-Type", fault.content_type), *fault.headers.items()],
                            fault.body(),
                        )
                        return
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                    conn.request(self.command, self.path, body=body or None, headers=headers)
                    reply = conn.getresponse()
                    content = reply.read()
                    passed = [(k, v) for k, v in reply.getheaders() if k.lower() not in HOP_BY_HOP]
                finally:
                    conn.close()
                if self.command == "POST" and self.path == REPORTS:
                    with lock:
                        front.posts.append(reply.status)
                self.answer(reply.status, passed, content)

            def answer(self, status: int, headers: Iterable[tuple[str, str]], body: bytes) -> None:
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def __enter__(self) -> FaultyFront:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)
