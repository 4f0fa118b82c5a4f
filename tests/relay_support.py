"""A real `deniable-relay` process for the tests, and a recording HTTP server that plays the
gateway to see exactly what the relay forwards."""

from __future__ import annotations

import http.client
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import requests

from tests.conftest import BIN, free_port

RELAY = BIN / "deniable-relay"
#: The longest a gated gateway holds a request (a test sets the gate long before; this only
#: ends a failed test's wait).
GATE_SECONDS = 60


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
                if requests.get(f"{self.url}healthz", timeout=5).status_code == 200:
                    return
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.05)  # not listening yet, or slow to answer under load
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


def recording_gateway(
    delay: float = 0.0, gate: threading.Event | None = None
) -> tuple[ThreadingHTTPServer, Recorded]:
    """A real HTTP server on a free port that records every POST and answers 200 with the body
    echoed as message/ohttp-res (so each sender can tell its answer), `delay` seconds later;
    with a `gate`, not before the test sets it (what it holds stays held however slow the
    machine: no timing to win)."""
    seen = Recorded()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with seen.lock:
                seen.requests.append((self.path, dict(self.headers.items()), body))
            if gate is not None:
                gate.wait(GATE_SECONDS)
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


def slow_gateway(
    upstream: str, delay: float, *, tamper: bool = False, gate: threading.Event | None = None
) -> ThreadingHTTPServer:
    """A real HTTP server on a free port that passes each POST on to `upstream` (its body, type
    and batch tag) and answers with upstream's answer `delay` seconds later: a slow gateway;
    with a `gate`, not before the test sets it. With `tamper`, one bit of each body's last byte
    (the ciphertext's tag) is flipped on the way: a relay, or a network, that changes what it
    carries."""
    parts = urlsplit(upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if tamper and body:
                body = body[:-1] + bytes([body[-1] ^ 1])
            if gate is not None:
                gate.wait(GATE_SECONDS)
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


@contextmanager
def held_relay(upstream: str, **options: Any) -> Iterator[tuple[RelayProcess, threading.Event]]:
    """A relay (RelayProcess `options`) in front of a gateway to `upstream` that holds each
    request until the test sets the gate: a full queue stays full however slow the machine.
    Everything is let go and stopped on the way out."""
    gate = threading.Event()
    slow = slow_gateway(upstream, delay=0.0, gate=gate)
    relay = RelayProcess(f"http://127.0.0.1:{slow.server_address[1]}/ohttp", **options)
    try:
        yield relay, gate
    finally:
        gate.set()
        relay.stop()
        slow.shutdown()
        slow.server_close()


def relay_is_full(url: str) -> bool:
    """Whether the relay at `url` refuses one more request now (503: its queue is full). Asked
    with a request head whose body never follows: a relay with room admits it, waits for the
    body, and drops it unread when the probe hangs up, so the probe itself queues nothing."""
    parts = urlsplit(url)
    head = (
        f"POST {parts.path or '/'} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        "Content-Type: message/ohttp-req\r\nContent-Length: 1\r\n\r\n"
    ).encode("ascii")
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as probe:
        probe.sendall(head)
        probe.settimeout(0.5)  # a full relay answers at once; one with room waits for the body
        try:
            return probe.recv(64).startswith(b"HTTP/1.1 503")
        except TimeoutError:
            return False


def wait_until_full(url: str, seconds: float = 30) -> None:
    """Wait until the relay at `url` holds as many requests as its queue takes (a condition,
    not a guess at how long the senders take to get there)."""
    deadline = time.monotonic() + seconds
    while not relay_is_full(url):
        assert time.monotonic() < deadline, f"the relay's queue did not fill within {seconds} s"
        time.sleep(0.05)
