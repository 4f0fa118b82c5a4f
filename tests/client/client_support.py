"""Helpers for the client tests: a survey using every mechanism, researcher calls."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import requests


def survey_doc(survey_id: str, *, enrollment: str = "open") -> dict[str, Any]:
    """A survey with every mechanism: rr, two fair coins, grr (auto) and oue."""
    return {
        "id": survey_id,
        "title": f"Client test {survey_id}",
        "enrollment": enrollment,
        "questions": [
            {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
            {
                "id": "cannabis",
                "text": "Cannabis in the last 6 months?",
                "type": "binary",
                "mechanism": "coins",
                "coins": {"truth": 0.5, "yes": 0.5},
            },
            {
                "id": "party",
                "text": "Which party would you vote for?",
                "type": "categorical",
                "options": ["A", "B", "C", "D"],
                "epsilon": 2.0,
                "mechanism": "grr",
            },
            {
                "id": "fruit",
                "text": "Favourite fruit?",
                "type": "categorical",
                "options": ["apple", "pear", "plum", "fig", "kiwi", "lime"],
                "epsilon": 0.5,
                "mechanism": "oue",
            },
        ],
    }


TRUTH = {"smokes": "yes", "cannabis": "no", "party": "B", "fruit": "fig"}


def researcher(live_server: Any, method: str, path: str, **kwargs: Any) -> requests.Response:
    """A researcher request to the live server (bearer token)."""
    headers = {"Authorization": f"Bearer {live_server.token}"}
    return requests.request(
        method, f"{live_server.url}{path}", headers=headers, timeout=30, **kwargs
    )


def stored_reports(live_server: Any, survey_id: str) -> list[dict[str, Any]]:
    """Every report the live server stored for a survey (reports.jsonl)."""
    response = researcher(live_server, "GET", f"/api/v1/surveys/{survey_id}/reports.jsonl")
    response.raise_for_status()
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


class PostsDrop(requests.Session):
    """A network on which every POST fails (the link drops after the survey was fetched)."""

    def __init__(self, on_post: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.on_post = on_post
        self.posts = 0

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if str(method).upper() == "POST":
            self.posts += 1
            if self.on_post is not None:
                self.on_post()
            raise requests.ConnectionError("the network dropped")
        return super().request(method, url, *args, **kwargs)


class CountsPosts(requests.Session):
    """The real network, counting the GETs and POSTs that go out."""

    def __init__(self) -> None:
        super().__init__()
        self.posts = 0
        self.gets = 0

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self.posts += str(method).upper() == "POST"
        self.gets += str(method).upper() == "GET"
        return super().request(method, url, *args, **kwargs)


class FakeAggregator:
    """A misbehaving aggregator on a free loopback port: `routes` maps "METHOD /path" to a
    function of the request handler that writes the whole answer (status, headers, body).
    It serves the client-test survey (or `survey`) correctly unless a route says otherwise."""

    def __init__(self, routes: dict[str, Callable[[Any], None]], survey: Any = None) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from deniable.shared import Survey

        published = survey or Survey.from_dict(survey_doc("fake"))
        body = json.dumps({"survey": published.to_dict(), "survey_hash": published.hash})
        self.requests: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def handle_any(self) -> None:
                route = f"{self.command} {self.path}"
                fake.requests.append(route)
                length = int(self.headers.get("Content-Length") or 0)
                self.body = self.rfile.read(length) if length else b""
                if route in routes:
                    routes[route](self)
                elif route == f"GET /api/v1/surveys/{published.id}":
                    send(self, 200, body.encode())
                else:
                    send(self, 404, b"not here", "text/plain")

            do_GET = do_POST = handle_any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.survey = published
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def __enter__(self) -> FakeAggregator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)


def send(
    handler: Any,
    status: int,
    body: bytes,
    content_type: str = "application/json",
    **headers: str,
) -> None:
    """Write one whole HTTP answer from a FakeAggregator route."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)


def finished_within(seconds: float, call: Callable[[], Any]) -> Any:
    """call()'s value, or a test failure if it hangs (a guard against hangs, not a speed test)."""
    found: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            found.append((True, call()))
        except BaseException as exc:  # handed to the test's thread
            found.append((False, exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert found, f"still running after {seconds} s"
    ok, value = found[0]
    if not ok:
        raise value
    return value
