"""HTTP calls to an aggregator: a requests Session with timeouts, retries and plain errors."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from urllib.parse import quote

import requests
import urllib3
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from urllib3.util.retry import Retry

from deniable.client.deadline import Deadline, DeadlineAdapter
from deniable.client.delivery import (
    TRANSIENT_STATUSES,
    Delivery,
    classify,
    is_problem,
    plain,
)
from deniable.client.errors import (
    ClientError,
    EnrollmentError,
    NetworkError,
    ServerError,
    SurveyChangedError,
)
from deniable.shared import signing
from deniable.shared.canonical import JSONTextError, canonical_json, parse_json
from deniable.shared.errors import SurveyError
from deniable.shared.survey import Survey

#: (connect, read) seconds.
DEFAULT_TIMEOUT: tuple[float, float] = (5.0, 30.0)
#: Reports per batch POST.
BATCH_SIZE = 100
#: Statuses worth retrying (the server may recover); a report_id makes a POST idempotent.
RETRY_STATUSES = (500, 502, 503, 504)
#: The most of an answer read from a server (a survey at the limits is well under 8 MiB): a
#: hostile or broken server cannot fill the device's memory. Nor can it hold the client by
#: trickling bytes (of the head or the body) under the read timeout: a request ends after
#: connect + 2 x read seconds.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
_NOTHING_SENT = "check the address and your connection, then try again (nothing was sent)"


def client_version() -> str:
    """The installed deniable version (for --version and the User-Agent)."""
    try:
        return version("deniable")
    except PackageNotFoundError:
        return "0+unknown"


class _Retry(Retry):
    """urllib3's retries, except of an answer that says when to come back (Retry-After)."""

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        return not has_retry_after and super().is_retry(method, status_code, has_retry_after)


def make_session() -> requests.Session:
    """A Session that retries connection errors and 5xx (POST included) with a small backoff,
    unless the server said when to come back."""
    retry = _Retry(
        total=3,
        connect=3,
        read=1,
        status=3,
        backoff_factor=0.2,
        status_forcelist=RETRY_STATUSES,
        allowed_methods=frozenset({"GET", "POST"}),
        raise_on_status=False,
        # A server's Retry-After (hours, even) would hold the respondent's command: an answer
        # with one is not retried here; the report stays queued, and `sync` sends it once
        # that time has come (deniable.client.delivery).
        respect_retry_after_header=False,
    )
    session = requests.Session()
    adapter = DeadlineAdapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = f"deniable/{client_version()}"
    return session


def describe_failure(exc: BaseException) -> str:
    """A few words on why a request failed ("connection refused", "timed out", ...)."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        err = stack.pop()
        if id(err) in seen:
            continue
        seen.add(id(err))
        if isinstance(err, ConnectionRefusedError):
            return "connection refused"
        if isinstance(err, socket.gaierror) or type(err).__name__ == "NameResolutionError":
            return "the host name could not be resolved"
        if isinstance(err, requests.Timeout | TimeoutError | socket.timeout):
            return "timed out"
        if isinstance(err, ssl.SSLError | requests.exceptions.SSLError):
            return "the TLS handshake failed"
        if isinstance(err, ConnectionResetError):
            return "the connection was reset"
        for nxt in (getattr(err, "reason", None), err.__cause__, err.__context__, *err.args):
            if isinstance(nxt, BaseException):
                stack.append(nxt)
    return "the connection failed"


@dataclass(frozen=True)
class Outcome:
    """What happened to one report: accepted, duplicate, rejected (with reason) or queued
    (with the seconds the server asked to wait, if it did)."""

    result: str
    reason: str | None = None
    retry_after: int | None = None


class _TooLarge(Exception):
    """A server answer over MAX_RESPONSE_BYTES."""


def _read_limited(response: requests.Response, deadline: float) -> bytes:
    """The body, read as it arrives (never more than MAX_RESPONSE_BYTES, never past the
    deadline: each read returns what one receive brought)."""
    parts: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise requests.Timeout("the answer did not arrive in time")
        chunk = response.raw.read1(8192, decode_content=True)
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise _TooLarge(f"sent an answer over {MAX_RESPONSE_BYTES:,} bytes; nothing was sent")
        parts.append(chunk)


def _json(response: requests.Response) -> Any:
    try:
        return parse_json(response.content)
    except JSONTextError:
        return None


def _detail(response: requests.Response) -> str:
    body = _json(response)
    if isinstance(body, dict):
        for key in ("detail", "reason", "title"):
            if isinstance(body.get(key), str) and body[key].strip():
                return plain(body[key])
    return plain(f"HTTP {response.status_code} {response.reason or ''}".strip())


def _redirect(response: requests.Response) -> str:
    where = plain(response.headers.get("Location", "elsewhere"), 120)
    return f"redirects to {where}: give that address instead"


class Api:
    """The aggregator's respondent endpoints (v1) on one server."""

    def __init__(
        self,
        server: str,
        session: requests.Session,
        timeout: float | tuple[float, float] = DEFAULT_TIMEOUT,
    ) -> None:
        self.server = server
        self.session = session
        self.timeout = timeout

    def _request(
        self, method: str, path: str, *, advice: str = "", **kwargs: Any
    ) -> requests.Response:
        url = f"{self.server}{path}"
        connect, read = self.timeout if isinstance(self.timeout, tuple) else (self.timeout,) * 2
        deadline = Deadline(time.monotonic() + connect + 2 * read)
        try:
            with deadline:
                response = self.session.request(
                    method, url, timeout=self.timeout, stream=True, allow_redirects=False, **kwargs
                )
                with response:
                    response._content = _read_limited(response, deadline.at)  # for .content
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            why = "timed out" if deadline.expired else describe_failure(exc)
            message = f"could not reach {self.server}: {why}"
            raise NetworkError(f"{message}; {advice}" if advice else message) from exc
        except _TooLarge as exc:
            raise ServerError(f"{self.server} {exc}") from None
        return response

    def fetch_survey(self, survey_id: str) -> Survey:
        """The published survey, checked against the hash the server gives for it."""
        response = self._request(
            "GET", f"/api/v1/surveys/{quote(survey_id, safe='')}", advice=_NOTHING_SENT
        )
        if 300 <= response.status_code < 400:
            raise ClientError(f"{self.server} {_redirect(response)}; nothing was sent")
        if response.status_code == 404:
            raise ClientError(f"no survey {survey_id!r} at {self.server}: {_detail(response)}")
        if response.status_code >= 500:
            raise ServerError(
                f"{self.server} failed to serve survey {survey_id!r}: {_detail(response)}"
            )
        if response.status_code != 200:
            raise ClientError(f"{self.server} refused survey {survey_id!r}: {_detail(response)}")
        body = _json(response)
        if not isinstance(body, dict) or not isinstance(body.get("survey"), dict):
            raise ServerError(f"{self.server} did not answer with a survey for {survey_id!r}")
        try:
            survey = Survey.from_dict(body["survey"])
        except SurveyError as exc:
            raise ServerError(f"{self.server} published an invalid survey: {exc}") from None
        if survey.id != survey_id:
            raise ServerError(f"asked {self.server} for survey {survey_id!r}, got {survey.id!r}")
        if body.get("survey_hash") != survey.hash:
            raise SurveyChangedError(
                f"survey {survey_id!r} from {self.server} does not match its published hash "
                "(it changed or was tampered with); nothing was sent"
            )
        return survey

    def enroll(self, survey: Survey, key: Ed25519PrivateKey, invitation: str) -> None:
        """Register this device's key for an invite-only survey with a single-use code."""
        public_key = signing.public_key_text(key)
        proof = canonical_json(
            {
                "purpose": "enroll",
                "survey": survey.id,
                "survey_hash": survey.hash,
                "public_key": public_key,
                "invitation": invitation,
            }
        )
        payload = {
            "public_key": public_key,
            "invitation": invitation,
            "signature": signing.sign(key, proof),
        }
        path = f"/api/v1/surveys/{quote(survey.id, safe='')}/enrollments"
        response = self._request("POST", path, json=payload, advice=_NOTHING_SENT)
        if response.status_code in (200, 201):
            return
        if response.status_code >= 500:
            raise ServerError(f"{self.server} failed to enroll this device: {_detail(response)}")
        raise EnrollmentError(f"the invitation was not accepted: {_detail(response)}")

    def post_report(self, report: Mapping[str, Any]) -> Outcome:
        """Send one report; its outcome by the delivery policy (deniable.client.delivery):
        network failures, 408/425/429, 5xx and answers not the aggregator's give "queued"."""
        try:
            response = self._request("POST", "/api/v1/reports", json=report)
        except (NetworkError, ServerError) as exc:  # unreachable, or an answer too large
            return Outcome("queued", str(exc))
        found = classify(
            response.status_code, response.headers, response.content, report["report_id"]
        )
        return self._outcome(response, found)

    def post_reports(self, reports: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        """Send reports in batches; each gets its own outcome, in order."""
        outcomes: list[Outcome] = []
        for start in range(0, len(reports), BATCH_SIZE):
            outcomes.extend(self._post_batch(reports[start : start + BATCH_SIZE]))
        return outcomes

    def _post_batch(self, batch: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        if len(batch) == 1:
            return [self.post_report(batch[0])]
        try:
            response = self._request("POST", "/api/v1/reports", json={"reports": list(batch)})
        except (NetworkError, ServerError) as exc:
            return [Outcome("queued", str(exc))] * len(batch)
        status = response.status_code
        if (
            400 <= status < 500
            and status not in TRANSIENT_STATUSES
            and is_problem(response.headers.get("Content-Type"))
        ):  # the batch refused as a whole (say, too large): each report on its own
            return [self.post_report(report) for report in batch]
        return [
            self._outcome(
                response,
                classify(status, response.headers, response.content, report["report_id"], i),
            )
            for i, report in enumerate(batch)
        ]

    def _outcome(self, response: requests.Response, found: Delivery) -> Outcome:
        """The policy's delivery as an Outcome; a queued report's reason names the server (and
        where a redirect points: the address to give instead)."""
        if found.outcome != "queued":
            return Outcome(found.outcome, found.reason)
        if 300 <= response.status_code < 400:
            return Outcome("queued", f"{self.server} {_redirect(response)}", found.retry_after)
        return Outcome("queued", f"{self.server} answered {found.reason}", found.retry_after)
