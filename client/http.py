"""HTTP calls to an aggregator: a requests Session with timeouts, retries and plain errors."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from deniable.client.errors import (
    ClientError,
    EnrollmentError,
    NetworkError,
    ServerError,
    SurveyChangedError,
)
from deniable.shared import signing
from deniable.shared.canonical import canonical_json
from deniable.shared.errors import SurveyError
from deniable.shared.survey import Survey

#: (connect, read) seconds.
DEFAULT_TIMEOUT: tuple[float, float] = (5.0, 30.0)
#: Reports per batch POST.
BATCH_SIZE = 100
#: Statuses worth retrying (the server may recover); a report_id makes a POST idempotent.
RETRY_STATUSES = (500, 502, 503, 504)
#: Client errors that mean "later", not "never".
TRANSIENT_CLIENT_STATUSES = (408, 425, 429)
_NOTHING_SENT = "check the address and your connection, then try again (nothing was sent)"


def client_version() -> str:
    """The installed deniable version (for --version and the User-Agent)."""
    try:
        return version("deniable")
    except PackageNotFoundError:
        return "0+unknown"


def normalize_url(url: str) -> str:
    """The server URL as the ledger keys it: scheme and host lower-cased, no trailing slash."""
    text = url.strip()
    if "://" not in text:
        raise ClientError(f"{url!r} is not a server address; give one like http://127.0.0.1:8000")
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ClientError(f"{url!r} is not an http(s) address; give one like https://example.org")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", ""))


def make_session() -> requests.Session:
    """A Session that retries connection errors and 5xx (POST included) with a small backoff."""
    retry = Retry(
        total=3,
        connect=3,
        read=2,
        status=3,
        backoff_factor=0.2,
        status_forcelist=RETRY_STATUSES,
        allowed_methods=frozenset({"GET", "POST"}),
        raise_on_status=False,
        respect_retry_after_header=True,
    )
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
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
    """What happened to one report: accepted, duplicate, rejected (with reason) or queued."""

    result: str
    reason: str | None = None


def _json(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _detail(response: requests.Response) -> str:
    body = _json(response)
    if isinstance(body, dict):
        for key in ("detail", "reason", "title"):
            if isinstance(body.get(key), str) and body[key]:
                return " ".join(body[key].split())
    return f"HTTP {response.status_code} {response.reason or ''}".strip()


def _outcome(body: object, status: int) -> Outcome | None:
    if not isinstance(body, dict):
        return None
    result = body.get("result")
    if result in ("accepted", "duplicate"):
        return Outcome(result)
    if result == "rejected":
        reason = body.get("reason") or body.get("detail") or f"HTTP {status}"
        return Outcome("rejected", str(reason))
    return None


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
        try:
            return self.session.request(method, url, timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            message = f"could not reach {self.server}: {describe_failure(exc)}"
            raise NetworkError(f"{message}; {advice}" if advice else message) from exc

    def fetch_survey(self, survey_id: str) -> Survey:
        """The published survey, checked against the hash the server gives for it."""
        response = self._request(
            "GET", f"/api/v1/surveys/{quote(survey_id, safe='')}", advice=_NOTHING_SENT
        )
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
        """Send one report; network failures and 5xx give a "queued" outcome, not an exception."""
        try:
            response = self._request("POST", "/api/v1/reports", json=report)
        except NetworkError as exc:
            return Outcome("queued", str(exc))
        outcome = _outcome(_json(response), response.status_code)
        if outcome is not None and response.status_code < 500:
            return outcome
        return self._unexpected(response)

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
        except NetworkError as exc:
            return [Outcome("queued", str(exc))] * len(batch)
        body = _json(response)
        results = body.get("results") if isinstance(body, dict) else None
        if response.status_code == 200 and isinstance(results, list) and len(results) == len(batch):
            outcomes = [_outcome(item, 200) for item in results]
            return [o or Outcome("queued", "the server gave no result") for o in outcomes]
        if (
            400 <= response.status_code < 500
            and response.status_code not in TRANSIENT_CLIENT_STATUSES
        ):
            return [self.post_report(report) for report in batch]  # e.g. the batch was too large
        return [self._unexpected(response)] * len(batch)

    def _unexpected(self, response: requests.Response) -> Outcome:
        status = response.status_code
        if status >= 500 or status in TRANSIENT_CLIENT_STATUSES:
            return Outcome("queued", f"{self.server} answered {_detail(response)}")
        if 400 <= status < 500:
            return Outcome("rejected", _detail(response))
        return Outcome("queued", f"{self.server} answered HTTP {status} without a result")
