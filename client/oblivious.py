"""Sending reports through a survey's relay (Oblivious HTTP, docs/anonymity.md): each report on
its own, encapsulated to the key the survey names, so the relay sees who sends but not what,
and the aggregator what but not who. The answer inside is read by the same delivery policy as
a direct POST (deniable.client.delivery); the relay's own answers too (a 503 with Retry-After
leaves the report queued, as the aggregator's would).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from deniable.client.delivery import classify
from deniable.client.errors import NetworkError, ServerError
from deniable.client.http import Api, Outcome
from deniable.client.ledger import StoredReport
from deniable.shared import bhttp, ohttp
from deniable.shared.canonical import canonical_json
from deniable.shared.route import Route

REPORTS_PATH = "/api/v1/reports"


def _relay_api(api: Api, route: Route) -> tuple[Api, str]:
    """An Api on the relay's origin (the aggregator's session and timeouts), and its path."""
    parts = urlsplit(route.relay)
    return Api(f"{parts.scheme}://{parts.netloc}", api.session, api.timeout), parts.path or "/"


def inner_request(api: Api, report: dict[str, Any]) -> bytes:
    """The report POST as Binary HTTP: the aggregator's authority and path, the JSON body and
    its content type, nothing else (no user agent, no cookie)."""
    parts = urlsplit(api.server)
    path = parts.path.rstrip("/") + REPORTS_PATH
    request = bhttp.Request(
        "POST",
        parts.scheme,
        parts.netloc,
        path,
        (("content-type", "application/json"),),
        canonical_json(report),
    )
    return bhttp.encode_request(request)


def post_relayed(api: Api, route: Route, report: dict[str, Any]) -> Outcome:
    """Send one report through the relay; its outcome by the delivery policy."""
    relay, path = _relay_api(api, route)
    sealed = ohttp.encapsulate_request(route.config, inner_request(api, report))
    try:
        response = relay._request(
            "POST",
            path,
            data=sealed.encapsulated,
            headers={"Content-Type": ohttp.REQUEST_TYPE},
        )
    except (NetworkError, ServerError) as exc:  # unreachable, or an answer too large
        return Outcome("queued", str(exc))
    kind = (response.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if response.status_code == 200 and kind == ohttp.RESPONSE_TYPE:
        try:
            inner = bhttp.decode_response(sealed.open_response(response.content))
        except (ohttp.OHTTPError, bhttp.BinaryHTTPError) as exc:
            return Outcome("queued", f"{route.relay} passed on an answer that does not open: {exc}")
        found = classify(inner.status, dict(inner.headers), inner.content, report["report_id"])
        return api._outcome(response, found)
    found = classify(response.status_code, response.headers, response.content, report["report_id"])
    return relay._outcome(response, found)


def post_routed(api: Api, group: Sequence[StoredReport]) -> list[Outcome]:
    """Each stored report's outcome, in order: straight to the aggregator in batches, or one by
    one through its survey's relay."""
    direct = iter(api.post_reports([s.report for s in group if s.route is None]))
    return [
        next(direct) if s.route is None else post_relayed(api, s.route, s.report) for s in group
    ]
