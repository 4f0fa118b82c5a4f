"""A real `deniable-relay` process for the tests, and a recording HTTP server that plays the
gateway to see exactly what the relay forwards."""

from __future__ import annotations

import http.client
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import requests

from tests.conftest import BIN, free_port

RELAY = BIN / "deniable-relay"


class RelayProcess:
    """`deniable-relay --gateway URL --batch N --max-delay S` on a free port."""

    def __init__(
        self,
        gateway: str,
        *,
        batch: int,
        max_delay: float,
        queue_limit: int = 1000,
        port: int | None = None,
    ):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process = subprocess.Popen(
            [
                str(RELAY),
                "--gateway",
                gateway,
                "--batch",
                str(batch),
                "--max-delay",
                str(max_delay),
                "--queue-limit",
                str(queue_limit),
                "--port",
                str(self.port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"deniable-relay exited: {self.process.stderr.read()}")  # type: ignore[union-attr]
            try:
                if requests.get(f"{self.url}healthz", timeout=1).status_code == 200:
                    return
            except requests.ConnectionError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("deniable-relay did not start")

    def stop(self) -> None:
        """SIGTERM (the relay sends what it holds first), then wait."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.process.stderr:
            self.process.stderr.close()


class Recorded:
    """What the recording gateway received: (path, headers, body) in arrival order."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.lock = threading.Lock()


def recording_gateway(delay: float = 0.0) -> tuple[ThreadingHTTPServer, Recorded]:
    """A real HTTP server on a free port that records every POST and answers 200 with the body
    echoed as message/ohttp-res (so each sender can tell its answer), `delay` seconds later."""
    seen = Recorded()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with seen.lock:
                seen.requests.append((self.path, dict(self.headers.items()), body))
            time.sleep(delay)
            self.send_response(200)
            self.send_header("Content-Type", "message/ohttp-res")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def slow_gateway(upstream: str, delay: float, *, tamper: bool = False) -> ThreadingHTTPServer:
    """A real HTTP server on a free port that passes each POST on to `upstream` (its body, type
    and batch tag) and answers with upstream's answer `delay` seconds later: a slow gateway.
    With `tamper`, one bit of each body's last byte (the ciphertext's tag) is flipped on the
    way: a relay, or a network, that changes what it carries."""
    parts = urlsplit(upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if tamper and body:
                body = body[:-1] + bytes([body[-1] ^ 1])
            time.sleep(delay)
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
            headers = {"Content-Type": self.headers["Content-Type"]}
            if self.headers.get("Deniable-Batch"):
                headers["Deniable-Batch"] = self.headers["Deniable-Batch"]
            conn.request("POST", parts.path, body, headers)
            answer = conn.getresponse()
            data = answer.read()
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.getheader("Content-Type") or "")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            conn.close()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
