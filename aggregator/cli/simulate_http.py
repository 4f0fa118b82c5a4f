"""Simulated respondents over HTTP: their signed reports posted to a served aggregator.

The edge of `simulate` (the CLI command and the demo): the survey is fetched and the reports
posted in batches through the client library's HTTP layer, re-sending what the server asked to
send later. The respondents themselves (truths, answers, reports, the comparison with the
estimates) are pure and live in aggregator/stats/simulate.py.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from deniable.aggregator.stats.simulate import (
    SimulationError,
    Truth,
    respondent_reports,
)
from deniable.client.http import Api, Outcome, make_session
from deniable.client.urls import normalize_url
from deniable.shared.signing import generate_key
from deniable.shared.survey import Survey


@dataclass
class Sent:
    """What happened to the simulated reports."""

    reports: list[dict[str, Any]] = field(default_factory=list)
    accepted_reports: list[dict[str, Any]] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)

    @property
    def accepted(self) -> int:
        return len(self.accepted_reports)

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def failure_text(self) -> str:
        """A one-line summary of what was not accepted."""
        parts = [f"{reason} ({count})" for reason, count in sorted(self.failures.items())]
        return f"{self.failed} of {len(self.reports)} reports were not accepted: " + "; ".join(
            parts
        )


def fetch_survey(url: str, survey_id: str) -> tuple[Api, Survey]:
    """The client library's HTTP layer for the server, and the published survey."""
    api = Api(normalize_url(url), make_session())
    return api, api.fetch_survey(survey_id)


def enroll_all(api: Api, survey: Survey, keys: Sequence[Any], codes: Sequence[str]) -> None:
    """Enroll each key with its own invitation code (invite-only surveys)."""
    for key, code in zip(keys, codes, strict=True):
        api.enroll(survey, key, code)


#: Rounds of re-sending reports the server asked to send later (say, a busy database's 503),
#: and the longest wait between two rounds, in seconds.
RESEND_ROUNDS = 4
MAX_RESEND_WAIT = 5.0


def _post_until_answered(api: Api, reports: Sequence[dict[str, Any]]) -> list[Outcome]:
    """Post reports, sending the queued ones again after the wait the server asked for (or a
    second); a report that had landed comes back "duplicate", which counts as accepted."""
    outcomes = list(api.post_reports(reports))
    for _ in range(RESEND_ROUNDS):
        waiting = [i for i, outcome in enumerate(outcomes) if outcome.result == "queued"]
        if not waiting:
            break
        wait = max((outcomes[i].retry_after or 1) for i in waiting)
        time.sleep(min(float(wait), MAX_RESEND_WAIT))
        again = api.post_reports([reports[i] for i in waiting])
        for i, outcome in zip(waiting, again, strict=True):
            outcomes[i] = Outcome("accepted") if outcome.result == "duplicate" else outcome
    return outcomes


def send(
    api: Api,
    survey: Survey,
    truth: Truth,
    n: int,
    *,
    batch: int = 500,
    seed: int | None = None,
    codes: Sequence[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Sent:
    """Make n simulated respondents and post their reports in batches; the outcome counts."""
    if n < 1:
        raise SimulationError("--respondents: expected at least 1")
    rng = random.Random(seed)
    sent = Sent()
    done = 0
    while done < n:
        size = min(batch, n - done)
        keys = [generate_key() for _ in range(size)]
        if survey.enrollment == "invite":
            if codes is None:
                raise SimulationError(
                    f"survey {survey.id!r} is invite-only: give --token so the simulator can issue invitation codes"
                )
            enroll_all(api, survey, keys, codes[done : done + size])
        reports = respondent_reports(survey, truth, keys, rng)
        for report, outcome in zip(reports, _post_until_answered(api, reports), strict=True):
            if outcome.result == "accepted":
                sent.accepted_reports.append(report)
            else:
                reason = f"{outcome.result}: {outcome.reason}" if outcome.reason else outcome.result
                sent.failures[reason] = sent.failures.get(reason, 0) + 1
        sent.reports.extend(reports)
        done += size
        if progress is not None:
            progress(size)
    return sent
