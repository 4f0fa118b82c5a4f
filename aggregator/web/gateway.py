"""The aggregator as an Oblivious HTTP gateway (RFC 9458; docs/anonymity.md): a WSGI layer in
front of Flask, like the report endpoint (web/report_endpoint.py), for the cost of Flask's
request handling.

- GET /.well-known/ohttp-keys answers the current key's configuration
  (application/ohttp-keys).
- POST /ohttp takes message/ohttp-req: the Binary HTTP request inside must be a POST of one
  report to /api/v1/reports. It is answered by the report endpoint itself, as if posted there
  (the same checks, refusals and statuses), and its answer goes back sealed,
  message/ohttp-res. Nothing of the outer request but the relay's address (for rate limits)
  reaches the inner one. A relay of DENIABLE_RELAY_ADDRESSES is limited by
  DENIABLE_RELAY_RATE_LIMIT, any other address as for a direct POST (limits.PostCounter); an
  address at its limit is refused (429) before any decryption.
- A request that names a key or suite this gateway does not hold is a 400 problem of type
  ohttp-key (the client drops it: it can never be read); one that does not open (changed on
  the way) is a plain-text 400, which the delivery policy keeps queued and sends again.
- A report accepted from a relay batch (the relay's Deniable-Batch header) is counted in that
  batch, by survey and pattern of plain answers (store/gateway.py): a survey's shuffle n.
"""

from __future__ import annotations

import io
import json
import re
import threading
import time
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from flask import Flask

from deniable.aggregator.gateway import keys as gateway_keys
from deniable.aggregator.store import Store
from deniable.aggregator.web import problems, report_endpoint
from deniable.aggregator.web.bodies import read_body
from deniable.aggregator.web.db import EXTENSION as STORES
from deniable.aggregator.web.db import SURVEYS
from deniable.aggregator.web.limits import RELAYED, listed_relay, post_counter
from deniable.aggregator.web.report_endpoint import StartResponse, WSGIApp, recent_records
from deniable.shared import bhttp, ohttp
from deniable.shared.canonical import JSONTextError, canonical_json, parse_json, sha256_hex

#: The header a relay tags each request of a batch with (deniable.relay.forward says the same).
BATCH_TAG_HEADER = "Deniable-Batch"
#: Where the app keeps its Gateway (and so the keys it read).
EXTENSION = "deniable.gateway"
KEYS_PATH = "/.well-known/ohttp-keys"
GATEWAY_PATH = "/ohttp"
#: The relay's batch tag (docs/anonymity.md#how-a-report-travels): 32 lower-case hex digits,
#: in the header the relay names (here as a WSGI environ key).
BATCH_HEADER = "HTTP_" + BATCH_TAG_HEADER.upper().replace("-", "_")
BATCH_TAG = re.compile(r"[0-9a-f]{32}")
#: Seconds a process keeps the keys it read; a key id it does not know reads them again, at
#: most once per KEYS_RETRY seconds (a rotation reaches every process within KEYS_TTL).
KEYS_TTL = 60.0
KEYS_RETRY = 5.0
#: What an encapsulated request adds to the report it carries, at most (bytes).
OVERHEAD = 1024


class _Keys:
    """The gateway keys one app read from its store, kept KEYS_TTL seconds."""

    def __init__(self) -> None:
        self._keys: dict[int, ohttp.GatewayKey] = {}
        self._document = b""
        self._read_at = -1e9
        self._lock = threading.Lock()

    def _refresh(self, store: Store) -> None:
        document = gateway_keys.keys_document(store)
        keys = gateway_keys.accepted_keys(store)
        with self._lock:
            self._keys, self._document, self._read_at = keys, document, time.monotonic()

    def _fresh(self, store: Store, *, unknown: bool = False) -> None:
        age = time.monotonic() - self._read_at
        if age > KEYS_TTL or (unknown and age > KEYS_RETRY):
            self._refresh(store)

    def document(self, store: Store) -> bytes:
        self._fresh(store)
        return self._document

    def keys(self, store: Store, key_id: int | None) -> dict[int, ohttp.GatewayKey]:
        self._fresh(store, unknown=key_id is not None and key_id not in self._keys)
        return self._keys


def _status_line(status: int) -> str:
    return f"{status} {HTTPStatus(status).phrase}"


def _plain_text(status: int, text: str, start_response: StartResponse) -> Iterable[bytes]:
    data = text.encode("utf-8")
    start_response(
        _status_line(status),
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))],
    )
    return [data]


class Gateway:
    """WSGI layer: answers /.well-known/ohttp-keys and POST /ohttp, passes on the rest."""

    def __init__(self, app: Flask, wsgi_app: WSGIApp):
        self.app = app
        self.wsgi_app = wsgi_app
        self.keys = _Keys()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO")
        if path == KEYS_PATH and environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            return self._respond(self._key_configs, environ, start_response)
        if path != GATEWAY_PATH:
            return self.wsgi_app(environ, start_response)
        if environ.get("REQUEST_METHOD") != "POST":
            refusal = problems.problem_response(
                405, "POST an encapsulated request (message/ohttp-req)"
            )
            refusal.headers["Allow"] = "POST"
            return refusal(environ, start_response)
        return self._respond(self._gateway, environ, start_response)

    def _respond(
        self, handler: Any, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        try:
            return handler(environ, start_response)
        except Exception as exc:  # the app's own problem for anything refused or broken
            return problems.response_for(exc, self.app)(environ, start_response)

    def _key_configs(
        self, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        with self.app.extensions[STORES].borrowed() as store:
            document = self.keys.document(store)
        start_response(
            "200 OK",
            [
                ("Content-Type", ohttp.KEYS_TYPE),
                ("Content-Length", str(len(document))),
                ("Cache-Control", f"public, max-age={int(KEYS_TTL)}"),
            ],
        )
        return [] if environ.get("REQUEST_METHOD") == "HEAD" else [document]

    def _gateway(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        kind = (environ.get("CONTENT_TYPE") or "").split(";")[0].strip().lower()
        if kind != ohttp.REQUEST_TYPE:
            raise problems.Problem(415, f"send Content-Type: {ohttp.REQUEST_TYPE}")
        counter = post_counter(self.app)
        if counter is not None:  # an address at its limit costs no body read nor decryption
            counter.admit("reports", environ.get("REMOTE_ADDR") or "127.0.0.1", relayed=True)
        limit = self.app.config.get("MAX_CONTENT_LENGTH")
        data = read_body(environ, None if limit is None else limit + OVERHEAD)
        with self.app.extensions[STORES].borrowed() as store:
            key_id = data[0] if data else None
            try:
                opened = ohttp.decapsulate_request(self.keys.keys(store, key_id), data)
            except ohttp.OHTTPError as exc:
                if exc.kind == "key":
                    refusal = problems.problem_response(400, str(exc), type=ohttp.KEY_PROBLEM)
                    return refusal(environ, start_response)
                # Changed on the way, perhaps by the relay: refused, and the sender tries again.
                return _plain_text(400, f"{exc}; send it again", start_response)
            response, counted = self._inner(opened.request, environ)
            if counted is not None:
                self._count(store, counted, self._batch_tag(environ))
        sealed = opened.seal_response(bhttp.encode_response(response))
        start_response(
            "200 OK",
            [
                ("Content-Type", ohttp.RESPONSE_TYPE),
                ("Content-Length", str(len(sealed))),
                ("Cache-Control", "no-store"),
            ],
        )
        return [sealed]

    def _inner(self, raw: bytes, environ: dict[str, Any]) -> tuple[bhttp.Response, dict | None]:
        """The report endpoint's answer to the encapsulated request, and the report when it was
        accepted (to count in its batch)."""
        try:
            request = bhttp.decode_request(raw)
        except bhttp.BinaryHTTPError as exc:
            return _problem(400, f"the encapsulated request is not Binary HTTP: {exc}"), None
        if request.path.split("?")[0] != report_endpoint.PATH:
            return _problem(
                404, f"only {report_endpoint.PATH} is reached through this gateway"
            ), None
        if request.method != "POST":
            return _problem(405, f"POST a report to {report_endpoint.PATH}"), None
        try:
            body = parse_json(request.content)
        except JSONTextError:
            body = None  # the endpoint says what is wrong with it
        if isinstance(body, list) or (isinstance(body, dict) and "reports" in body):
            return _problem(
                422, "send one report per encapsulated request: reports sent together are linked"
            ), None
        inner = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": report_endpoint.PATH,
            "SCRIPT_NAME": environ.get("SCRIPT_NAME", ""),
            "QUERY_STRING": "",
            "CONTENT_TYPE": request.header("content-type") or "",
            "CONTENT_LENGTH": str(len(request.content)),
            "REMOTE_ADDR": environ.get("REMOTE_ADDR") or "127.0.0.1",  # the relay (rate limits)
            RELAYED: True,
            "SERVER_NAME": environ.get("SERVER_NAME", "localhost"),
            "SERVER_PORT": environ.get("SERVER_PORT", "80"),
            "SERVER_PROTOCOL": "HTTP/1.1",
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": environ.get("wsgi.url_scheme", "http"),
            "wsgi.input": io.BytesIO(request.content),
            "wsgi.errors": environ.get("wsgi.errors"),
            "wsgi.multithread": environ.get("wsgi.multithread", True),
            "wsgi.multiprocess": environ.get("wsgi.multiprocess", False),
            "wsgi.run_once": False,
        }
        answered: dict[str, Any] = {}

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
            answered["status"], answered["headers"] = int(status.split()[0]), headers

        chunks = self.app.wsgi_app(inner, start)  # every layer, the report endpoint's included
        try:
            content = b"".join(chunks)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        kept = tuple(
            (name.lower(), value)
            for name, value in answered["headers"]
            if name.lower() in ("content-type", "retry-after")
        )
        accepted = body if answered["status"] == 201 and isinstance(body, dict) else None
        return bhttp.Response(answered["status"], kept, content), accepted

    def _batch_tag(self, environ: dict[str, Any]) -> str | None:
        """The request's batch tag, when its sender may tag one: with DENIABLE_RELAY_ADDRESSES
        set, only a listed relay (anyone else could swell a batch, and with it the survey's
        shuffle n); without, any sender (docs/anonymity.md#rate-limits-and-relays)."""
        relays = tuple(self.app.config.get("RELAY_ADDRESSES") or ())
        address = environ.get("REMOTE_ADDR") or ""
        if relays and listed_relay(address, relays) is None:
            return None
        return environ.get(BATCH_HEADER)

    def _count(self, store: Store, report: dict[str, Any], tag: str | None) -> None:
        """Count an accepted report in its relay batch (none without a valid tag)."""
        if tag is None or not BATCH_TAG.fullmatch(tag):
            return
        survey_id = report.get("survey")
        record = (
            recent_records(self.app).get(store, survey_id) if isinstance(survey_id, str) else None
        )
        if record is None:
            return
        survey = self.app.extensions[SURVEYS].survey(record)
        store.count_in_batch(record.id, tag, plain_pattern(survey, report))


def plain_pattern(survey: Any, report: dict[str, Any]) -> str:
    """What singles a report out of its batch: the sha256 of its answers given as they are (plain
    questions, and split-ballot questions in their direct arm); "" when it has none."""
    answers = report.get("answers") or {}
    arms = report.get("arms") or {}
    given = {
        qid: answers[qid]
        for qid, question in survey.questions.items()
        if qid in answers and (question.plain or arms.get(qid) == "direct")
    }
    return sha256_hex(canonical_json(given)) if given else ""


def _problem(status: int, detail: str) -> bhttp.Response:
    body = json.dumps(
        {
            "type": "about:blank",
            "title": HTTPStatus(status).phrase,
            "status": status,
            "detail": detail,
        }
    ).encode("utf-8")
    return bhttp.Response(status, (("content-type", problems.PROBLEM_JSON),), body)


def init_app(app: Flask) -> None:
    """Answer OHTTP from a `Gateway` in front of Flask (the report endpoint goes in front of
    it, and the gateway hands each report to the app's outermost layer)."""
    found = app.extensions[EXTENSION] = Gateway(app, app.wsgi_app)
    app.wsgi_app = found  # type: ignore[method-assign]
