"""The relay's HTTP side: POST an encapsulated request (message/ohttp-req) to any path and get
the gateway's encapsulated answer once its batch has been sent. Limits, all checked before a
body is kept: a body of at most `max_body` bytes with a Content-Length, at most `queue_limit`
requests waiting (then 503 with Retry-After: the clients' delivery policy keeps the report and
sends it again), at most `queue_limit` + SPARE connections open. Errors are plain text, never
the aggregator's problem+json, so a client keeps its report queued. Browsers may call it from
any origin (CORS, no credentials). It logs no client address.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from deniable.relay.batches import Batcher, Forwarded, QueueFull
from deniable.relay.forward import REQUEST_TYPE

#: Connections beyond the queue limit accepted at once (for refusals and preflights).
SPARE = 64
#: Seconds a client has to send its request head and body.
READ_TIMEOUT = 15.0
_TEXT = "text/plain; charset=utf-8"
_CORS = (
    ("Access-Control-Allow-Origin", "*"),
    ("Access-Control-Expose-Headers", "Retry-After"),
)


class RelayServer(ThreadingHTTPServer):
    """A threaded HTTP server with a bounded number of connections, feeding one Batcher."""

    # On close the batcher sends what it holds and the POSTs being answered finish (every
    # request held when the relay stops gets its answer); idle keep-alive connections are not
    # waited for.
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], batcher: Batcher, *, max_body: int) -> None:
        self.batcher = batcher
        self.max_body = max_body
        # The longest a request waits for its batch: the delay, plus sending a batch.
        self.answer_timeout = batcher.max_delay + 120.0
        self._slots = threading.BoundedSemaphore(batcher.queue_limit + SPARE)
        self._posting = 0
        self._posting_lock = threading.Condition()
        super().__init__(address, RelayHandler)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            _refuse_busy(request, self.batcher.retry_after())
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def posting(self, change: int) -> None:
        """Count the POSTs being answered (+1 when one starts, -1 when it is written)."""
        with self._posting_lock:
            self._posting += change
            self._posting_lock.notify_all()

    def server_close(self) -> None:
        super().server_close()  # no new connection
        self.batcher.close()  # send what is held, so every waiting request is answered
        with self._posting_lock:
            self._posting_lock.wait_for(lambda: self._posting == 0, timeout=30)


def _refuse_busy(sock: socket.socket, retry: int) -> None:
    """A 503 written straight on the socket (no thread is free to read the request)."""
    body = b"the relay is busy; send it again later"
    head = (
        f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: {_TEXT}\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: {retry}\r\n"
        "Access-Control-Allow-Origin: *\r\nAccess-Control-Expose-Headers: Retry-After\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii")
    try:
        sock.settimeout(1.0)
        sock.sendall(head + body)
    except OSError:
        pass


class RelayHandler(BaseHTTPRequestHandler):
    """One client connection."""

    server: RelayServer
    protocol_version = "HTTP/1.1"
    server_version = "deniable-relay"
    sys_version = ""
    timeout = READ_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: a relay that logs addresses would undo what it is for."""

    def _answer(self, status: int, body: bytes, content_type: str = _TEXT, **extra: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in (*_CORS, *extra.items()):
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_OPTIONS(self) -> None:
        """A browser's CORS preflight: POST with a Content-Type, from any origin."""
        self.send_response(204)
        for name, value in (
            *_CORS,
            ("Access-Control-Allow-Methods", "POST"),
            ("Access-Control-Allow-Headers", "Content-Type"),
            ("Access-Control-Max-Age", "86400"),
            ("Content-Length", "0"),
        ):
            self.send_header(name, value)
        self.end_headers()

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/healthz":
            self._answer(200, b"ok\n")
        else:
            self._answer(404, b"POST encapsulated requests (message/ohttp-req) here\n")

    do_HEAD = do_GET

    def do_POST(self) -> None:
        self.server.posting(+1)
        try:
            self._post()
        finally:
            self.server.posting(-1)

    def _post(self) -> None:
        kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if kind != REQUEST_TYPE:
            self.close_connection = True
            self._answer(415, f"send Content-Type: {REQUEST_TYPE}\n".encode())
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            self._answer(411, b"send a Content-Length\n")
            return
        if int(length) > self.server.max_body:
            self.close_connection = True
            self._answer(413, f"at most {self.server.max_body} bytes\n".encode())
            return
        retry = str(self.server.batcher.retry_after())
        try:
            self.server.batcher.admit()
        except QueueFull:
            self.close_connection = True
            self._answer(
                503, b"the relay's queue is full; send it again later\n", Retry_After=retry
            )
            return
        body = self.rfile.read(int(length))
        if len(body) != int(length):
            self.close_connection = True
            return
        try:
            answer = self.server.batcher.submit(body, self.server.answer_timeout)
        except QueueFull:
            self._answer(
                503, b"the relay's queue is full; send it again later\n", Retry_After=retry
            )
            return
        if answer is None:
            answer = Forwarded(504, _TEXT, b"the gateway did not answer in time\n")
        extra = {"Retry_After": answer.retry_after} if answer.retry_after else {}
        self._answer(answer.status, answer.body, answer.content_type, **extra)
