"""Python access for researchers (notebooks, scripts): the aggregator's researcher endpoints.

from deniable.client import Researcher
r = Researcher("http://127.0.0.1:8000", token)
r.results("health-2026", confidence=0.9)        # the results JSON (docs/researchers.md)
for report in r.reports("health-2026"): ...     # streamed, one noisy report at a time
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import requests

from deniable.client.errors import ClientError, NetworkError, ServerError
from deniable.client.http import DEFAULT_TIMEOUT, describe_failure, make_session
from deniable.client.urls import normalize_url


def _detail(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return body["detail"]
    return f"HTTP {response.status_code} {response.reason or ''}".strip()


class Researcher:
    """A researcher's session with one aggregator, authenticated with a bearer token."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float | tuple[float, float] = DEFAULT_TIMEOUT,
        session: requests.Session | None = None,
    ) -> None:
        if not isinstance(token, str) or not token.strip():
            raise ClientError(
                "a researcher token is needed; make one with `deniable-aggregator create-token`"
            )
        self.url = normalize_url(url)
        self.timeout = timeout
        self.session = session or make_session()
        self.session.headers["Authorization"] = f"Bearer {token.strip()}"

    def _request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        try:
            response = self.session.request(
                method, f"{self.url}{path}", timeout=self.timeout, **kwargs
            )
        except requests.RequestException as exc:
            raise NetworkError(f"could not reach {self.url}: {describe_failure(exc)}") from exc
        if response.status_code == 401:
            raise ClientError(f"{self.url} refused the token: {_detail(response)}")
        if response.status_code >= 500:
            raise ServerError(f"{self.url} failed: {_detail(response)}")
        if response.status_code >= 400:
            raise ClientError(f"{self.url}: {_detail(response)}")
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise ServerError(f"{self.url} did not answer with JSON for {path}") from None

    @staticmethod
    def _survey_path(survey: str, tail: str = "") -> str:
        return f"/api/v1/surveys/{quote(survey, safe='')}{tail}"

    def results(
        self,
        survey: str,
        confidence: float = 0.95,
        simultaneous: bool = False,
        candidates: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Estimates with confidence intervals (docs/researchers.md's results JSON); `candidates`
        adds rows to the survey's text questions."""
        params = {
            "confidence": repr(float(confidence)),
            "simultaneous": str(bool(simultaneous)).lower(),
        }
        if candidates:
            params["candidates"] = ",".join(candidates)
        return self._json("GET", self._survey_path(survey, "/results"), params=params)

    def series_results(self, series: str, confidence: float = 0.95) -> dict[str, Any]:
        """A series of waves (docs/surveys.md#waves): each wave's results JSON, the changes
        between consecutive waves and the trend per question option, with intervals."""
        params = {"confidence": repr(float(confidence))}
        path = f"/api/v1/series/{quote(series, safe='')}/results"
        return self._json("GET", path, params=params)

    def results_csv(self, survey: str, confidence: float = 0.95, simultaneous: bool = False) -> str:
        """The results as CSV text."""
        params = {
            "confidence": repr(float(confidence)),
            "simultaneous": str(bool(simultaneous)).lower(),
        }
        response = self._request("GET", self._survey_path(survey, "/results.csv"), params=params)
        response.encoding = "utf-8"
        return response.text

    def regress(self, survey: str, formula: str, confidence: float = 0.95) -> dict[str, Any]:
        """Fit `outcome ~ covariates` on the stored reports (docs/analysis.md): rr's rrreg, or,
        with a plain outcome and a randomized yes/no among the terms, rrreg.predictor's joint
        model (`predictor`, `predictor_model`); the regression JSON."""
        body = {"formula": formula, "confidence": float(confidence)}
        return self._json("POST", self._survey_path(survey, "/regression"), json=body)

    def reports(self, survey: str) -> Iterator[dict[str, Any]]:
        """Every stored noisy report of a survey, streamed line by line."""
        response = self._request("GET", self._survey_path(survey, "/reports.jsonl"), stream=True)
        with response:
            try:
                for line in response.iter_lines():
                    if line.strip():
                        yield json.loads(line)
            except requests.RequestException as exc:
                raise NetworkError(
                    f"the report stream from {self.url} broke off: {describe_failure(exc)}"
                ) from exc

    def survey(self, survey: str) -> dict[str, Any]:
        """The published survey: {"survey": <resolved form>, "survey_hash": ...}."""
        return self._json("GET", self._survey_path(survey))

    def create_survey(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """Create a survey from its document; the server's answer (id, resolved survey, hash)."""
        return self._json("POST", "/api/v1/surveys", json=dict(doc))

    def invite(self, survey: str, n: int) -> list[str]:
        """n single-use invitation codes for an invite-only survey."""
        return list(
            self._json("POST", self._survey_path(survey, "/invitations"), json={"count": n})[
                "codes"
            ]
        )

    def close(self, survey: str) -> dict[str, Any]:
        """Stop the survey accepting reports; its summary."""
        return self._json("POST", self._survey_path(survey, "/close"))

    def list_surveys(self) -> list[dict[str, Any]]:
        """Every survey with its report count and state."""
        return list(self._json("GET", "/api/v1/surveys")["surveys"])

    def close_session(self) -> None:
        """Release the HTTP connections."""
        self.session.close()

    def __enter__(self) -> Researcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_session()
