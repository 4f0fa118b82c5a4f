"""The Client: answer a survey in a few lines, with the ledger, outbox and cap handled."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

import platformdirs
import requests

from deniable.client import memo
from deniable.client.errors import (
    ClientError,
    EpsilonCapError,
    RejectedError,
    SurveyClosedError,
)
from deniable.client.explain import explain_survey
from deniable.client.http import DEFAULT_TIMEOUT, Api, Outcome, make_session
from deniable.client.keys import KeyStore
from deniable.client.ledger import Ledger, StoredReport, utc_now
from deniable.client.oblivious import post_routed
from deniable.client.receipt import Receipt, Status
from deniable.client.urls import normalize_url
from deniable.shared import waves
from deniable.shared.ballot import split_lines
from deniable.shared.errors import SurveyError
from deniable.shared.report import build_report, hour_now, randomize_answers, sign_report
from deniable.shared.signing import public_key_text
from deniable.shared.survey import Survey, format_timestamp

#: The default cap on the total epsilon a respondent spends (docs/respondents.md: 10).
DEFAULT_EPSILON_CAP = 10.0
#: Slack for summing floats: a survey that lands exactly on the cap is allowed.
_CAP_SLACK = 1e-9


def default_data_dir() -> Path:
    """DENIABLE_HOME, else the user data directory (e.g. ~/.local/share/deniable)."""
    home = os.environ.get("DENIABLE_HOME")
    return Path(home) if home else Path(platformdirs.user_data_dir("deniable"))


def default_epsilon_cap() -> float:
    """DENIABLE_EPSILON_CAP, else 10."""
    raw = os.environ.get("DENIABLE_EPSILON_CAP")
    if not raw:
        return DEFAULT_EPSILON_CAP
    try:
        return _check_cap(float(raw))
    except (ValueError, ClientError):
        raise ClientError(f"DENIABLE_EPSILON_CAP must be a positive number, got {raw!r}") from None


def _check_cap(cap: float) -> float:
    if isinstance(cap, bool) or not isinstance(cap, int | float) or not (0 < cap < math.inf):
        raise ClientError(f"the epsilon cap must be a positive number, got {cap!r}")
    return float(cap)


class Client:
    """A respondent's device talking to one aggregator (`url`); the ledger covers every server.

    `answer` randomizes on this device, stores the signed report, then sends it. Answering a
    survey again never randomizes again: it returns (and, unless delivered, re-sends) the stored
    report. A report that could not be sent waits in the outbox until `sync`.
    """

    def __init__(
        self,
        url: str | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        epsilon_cap: float | None = None,
        timeout: float | tuple[float, float] = DEFAULT_TIMEOUT,
        session: requests.Session | None = None,
    ) -> None:
        self.url = normalize_url(url) if url is not None else None
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.epsilon_cap = (
            _check_cap(epsilon_cap) if epsilon_cap is not None else default_epsilon_cap()
        )
        self.timeout = timeout
        self._own_session = session is None
        self.session = session if session is not None else make_session()
        self.ledger = Ledger(self.data_dir)
        self.keys = KeyStore(self.data_dir / "keys")

    def __repr__(self) -> str:
        return (
            f"Client({self.url!r}, data_dir={str(self.data_dir)!r}, epsilon_cap={self.epsilon_cap})"
        )

    def close(self) -> None:
        """Close the HTTP session if this client made it."""
        if self._own_session:
            self.session.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- surveys -------------------------------------------------------------------------------
    def fetch_survey(self, survey_id: str) -> Survey:
        """The survey as the server publishes it, verified against its hash."""
        return self._api(self._server()).fetch_survey(survey_id)

    def explain(self, survey_id: str, *, lang: str | None = None) -> str:
        """In plain words: what answering the survey sends and what it costs in privacy (the
        product's words in `lang`, English without a catalog for it)."""
        survey = self.fetch_survey(survey_id)
        text = explain_survey(survey, spent=self.ledger.spent(), cap=self.epsilon_cap, lang=lang)
        shares = {qid: survey.questions[qid].direct_share for qid in survey.split}
        if not shares:
            return text
        # A split ballot (docs/surveys.md#split-ballot): said before any arm is drawn.
        return "\n".join([text, "", *split_lines(shares, lang)])  # type: ignore[arg-type]

    def receipt(self, survey_id: str) -> Receipt | None:
        """The stored receipt of a survey already answered on this server (no network), or None."""
        stored = self.ledger.get(self._server(), survey_id)
        return self._receipt(stored, None, repeated=True) if stored else None

    # -- answering -------------------------------------------------------------------------------
    def answer(
        self,
        survey_id: str,
        answers: Mapping[str, object],
        invitation: str | None = None,
        *,
        survey: Survey | None = None,
        arms: Mapping[str, str] | None = None,
    ) -> Receipt:
        """Randomize true answers on this device, store the signed report, then send it.

        `arms` are the split-ballot arms the respondent was shown (drawn with
        `Survey.draw_arms` before asking, docs/surveys.md#split-ballot); drawn here when not
        given. A direct arm's answer is sent as given and costs no epsilon.

        `survey` is the survey as already fetched and shown to the respondent: it is answered
        as is, not fetched again, so what is randomized and spent is what they agreed to (a
        server that changed it meanwhile refuses the report for its survey_hash).

        Returns a Receipt whose status is "accepted", "duplicate" or "queued" (could not be sent
        now; `sync` sends it later). Raises EpsilonCapError before anything is randomized if the
        survey would pass the cap, RejectedError if the server refuses the report (it is kept,
        marked rejected), and ClientError subclasses for everything else the user can act on.
        """
        server = self._server()
        stored = self.ledger.get(server, survey_id)
        if stored is not None:
            return self._answer_again(stored, invitation)
        api = self._api(server)
        if survey is None:
            survey = api.fetch_survey(survey_id)
        elif survey.id != survey_id:
            raise ClientError(f"the survey given is {survey.id!r}, not {survey_id!r}")
        if survey.is_closed():
            assert survey.closes_at is not None
            raise SurveyClosedError(
                f"survey {survey.id!r} closed at {format_timestamp(survey.closes_at)}; "
                "it no longer takes answers"
            )
        if survey.enrollment == "invite" and not invitation:
            raise ClientError(
                f"survey {survey.id!r} is by invitation only; give your invitation code "
                "(--invitation CODE)"
            )
        truth = check_true_answers(survey, answers)
        asked = survey.relevant(truth)
        if arms is None:
            arms = survey.draw_arms(asked)
        arms = {qid: arm for qid, arm in arms.items() if qid in asked}
        # The questions asked: a skipped one costs nothing, nor one asked directly.
        needed = survey.epsilon_of(truth, arms)
        repeated = bool(waves.longitudinal_questions(survey))
        if repeated:  # epsilon_perm only for a value not memoized yet (client/memo.py)
            memo.refuse_shared(survey)
            with self.ledger.transaction() as tx:
                needed = memo.would_charge(tx.conn, server, survey, truth, arms)
        self._check_budget(self.ledger.spent(), survey, needed)
        key = self.keys.key_for(server, survey.id)
        if invitation and survey.enrollment == "invite":
            api.enroll(survey, key, invitation)
        with self.ledger.transaction() as tx:
            stored = tx.get(server, survey.id)
            if stored is None:
                if repeated:
                    needed = memo.would_charge(tx.conn, server, survey, truth, arms)
                self._check_budget(tx.spent(), survey, needed)
                noisy = randomize_answers(survey, truth, arms)
                if repeated:  # the permanent answers drawn once, re-randomized each wave
                    drawn = memo.memoized_answers(
                        tx.conn, server, survey, noisy, truth, arms, now=utc_now()
                    )
                    report = build_report(survey, drawn.answers, key, arms=arms or None)
                    tx.insert(server, survey.title, drawn.epsilon, report, route=survey.route)
                else:
                    report = build_report(survey, noisy, key, arms=arms)
                    tx.record(server, survey, report)
        if stored is not None:  # another process answered it meanwhile: use its report
            return self._answer_again(stored, None)
        fresh = self.ledger.get(server, survey.id)
        assert fresh is not None
        return self._deliver(api, fresh, repeated=False)

    def _answer_again(self, stored: StoredReport, invitation: str | None) -> Receipt:
        """Send the stored report again (never a new randomization): the server answers
        "duplicate" for one it has. A report it took before stays recorded as taken when the
        server cannot be reached or refuses it now (say, the survey closed)."""
        api = self._api(stored.entry.server)
        if stored.entry.status == "sent":
            ((resent, outcome),) = self._send(api, [stored])
            if outcome.result in ("accepted", "duplicate"):
                return self._record(resent, outcome, repeated=True)
            return self._receipt(stored, None, repeated=True)
        if (waiting := _waiting(stored)) is not None:
            return self._receipt(stored, waiting, repeated=True)
        if invitation:
            survey = api.fetch_survey(stored.entry.survey)
            if survey.enrollment == "invite":
                api.enroll(survey, self.keys.key_for(stored.entry.server, survey.id), invitation)
        return self._deliver(api, stored, repeated=True)

    def _deliver(self, api: Api, stored: StoredReport, *, repeated: bool) -> Receipt:
        ((sent, outcome),) = self._send(api, [stored])
        receipt = self._record(sent, outcome, repeated=repeated)
        if receipt.status == "rejected":
            raise RejectedError(
                f"{receipt.server} rejected your report to {receipt.survey!r}: {receipt.reason}",
                receipt=receipt,
            )
        return receipt

    def _send(self, api: Api, group: list[StoredReport]) -> list[tuple[StoredReport, Outcome]]:
        """Post stored reports; one refused only because its sent_at has aged past the
        server's clock skew (it waited in the outbox) is stamped with this hour, signed again
        and sent once more: its answers, key and report_id stay, so nothing is randomized
        again, and the server never stored it (it answers "duplicate" to a report it has)."""
        sent = list(zip(group, post_routed(api, group), strict=True))
        restamped = [(i, self._restamped(s)) for i, (s, o) in enumerate(sent) if _aged(s, o)]
        stale = [(i, again) for i, again in restamped if again is not None]
        outcomes = post_routed(api, [again for _, again in stale])
        for (i, again), outcome in zip(stale, outcomes, strict=True):
            sent[i] = (again, outcome)
        return sent

    def _restamped(self, stored: StoredReport) -> StoredReport | None:
        """The stored report with sent_at set to this hour and signed again by its own key,
        saved first; None if that key is gone (a new one would be another respondent)."""
        key = self.keys.existing_key(stored.entry.server, stored.entry.survey)
        if key is None or public_key_text(key) != stored.report.get("public_key"):
            return None
        report = sign_report({**stored.report, "sent_at": hour_now()}, key)
        self.ledger.replace_report(stored.entry.report_id, report)
        return StoredReport(stored.entry, report, stored.result, stored.route)

    # -- outbox and ledger ---------------------------------------------------------------------
    def sync(self) -> list[Receipt]:
        """Send every report waiting in the outbox (to whichever server it belongs); one
        receipt each. Never raises for a report the server rejects or cannot take now. A
        report whose server asked (Retry-After) to be sent it later is not sent before then."""
        by_server: dict[str, list[StoredReport]] = {}
        receipts: list[Receipt] = []
        for stored in self.ledger.pending():
            if (waiting := _waiting(stored)) is not None:
                receipts.append(self._receipt(stored, waiting, repeated=True))
                continue
            by_server.setdefault(stored.entry.server, []).append(stored)
        for server, group in by_server.items():
            sent = self._send(self._api(server), group)
            receipts.extend(self._record(s, o, repeated=True) for s, o in sent)
        return receipts

    def status(self) -> Status:
        """Surveys answered, epsilon spent against the cap, and reports waiting."""
        entries = tuple(self.ledger.entries())
        return Status(
            surveys_answered=len(entries),
            epsilon_spent=math.fsum(e.epsilon for e in entries),
            epsilon_cap=self.epsilon_cap,
            pending=sum(1 for e in entries if e.status == "pending"),
            rejected=sum(1 for e in entries if e.status == "rejected"),
            entries=entries,
        )

    # -- helpers -----------------------------------------------------------------------------
    def _server(self) -> str:
        if self.url is None:
            raise ClientError("no server address: create the Client with the aggregator's URL")
        return self.url

    def _api(self, server: str) -> Api:
        return Api(server, self.session, self.timeout)

    def _check_budget(self, spent: float, survey: Survey, needed: float) -> None:
        if spent + needed > self.epsilon_cap + _CAP_SLACK:
            left = max(0.0, self.epsilon_cap - spent)
            raise EpsilonCapError(
                f"answering {survey.id!r} would spend epsilon {needed:.4g}, but you have spent "
                f"{spent:.4g} of your cap of {self.epsilon_cap:.4g} ({left:.4g} left); nothing was "
                "randomized or sent (the cap is DENIABLE_EPSILON_CAP)",
                spent=spent,
                cap=self.epsilon_cap,
                needed=needed,
            )

    def _record(self, stored: StoredReport, outcome: Outcome, *, repeated: bool) -> Receipt:
        status = {"accepted": "sent", "duplicate": "sent", "rejected": "rejected"}.get(
            outcome.result, "pending"
        )
        result = outcome.result if status != "pending" else None
        later = outcome.retry_after if status == "pending" else None
        retry_at = utc_now(later) if later else None
        self.ledger.mark(stored.entry.report_id, status, result, outcome.reason, retry_at)
        return self._receipt(stored, outcome, repeated=repeated)

    def _receipt(self, stored: StoredReport, outcome: Outcome | None, *, repeated: bool) -> Receipt:
        entry = stored.entry
        if outcome is not None:
            status, reason = outcome.result, outcome.reason
        elif entry.status == "sent":
            status, reason = stored.result or "accepted", None
        elif entry.status == "rejected":
            status, reason = "rejected", entry.reason
        else:
            status, reason = "queued", entry.reason
        return Receipt(
            survey=entry.survey,
            server=entry.server,
            report_id=entry.report_id,
            status=status,
            reason=reason,
            epsilon=entry.epsilon,
            epsilon_spent=self.ledger.spent(),
            answers=dict(stored.report["answers"]),
            repeated=repeated,
            survey_hash=entry.survey_hash,
            arms=dict(stored.report.get("arms") or {}),
        )


def _waiting(stored: StoredReport) -> Outcome | None:
    """A queued outcome if the server asked (Retry-After) not to be sent this report before a
    time still to come; None when it may be sent now."""
    retry_at = stored.entry.retry_at
    if stored.entry.status != "pending" or retry_at is None or retry_at <= utc_now():
        return None
    why = f"{stored.entry.server} asked to wait until {retry_at} before it is sent again"
    return Outcome("queued", why)


def _aged(stored: StoredReport, outcome: Outcome) -> bool:
    """Whether the server refused a report only for a sent_at older than this hour."""
    return (
        outcome.result == "rejected"
        and (outcome.reason or "").startswith("sent_at:")
        and stored.entry.status != "sent"
        and stored.report.get("sent_at") != hour_now()
    )


def check_true_answers(
    survey: Survey, answers: Mapping[str, object]
) -> dict[str, int | frozenset[int] | str]:
    """Each asked question's true answer, checked and normalized (an option index, an
    integer's value, a set of selected indices); the plain answers decide which questions are
    asked (docs/surveys.md#skip-logic). ClientError names what is wrong, an answer to a
    question they skip included."""
    if not isinstance(answers, Mapping):
        raise ClientError(f"answers must map question ids to answers, got {type(answers).__name__}")
    ids = ", ".join(survey.questions)
    for qid in answers:
        if qid not in survey.questions:
            raise ClientError(f"survey {survey.id!r} has no question {qid!r}; its questions: {ids}")
    truth: dict[str, int | frozenset[int] | str] = {}
    for qid, question in survey.questions.items():
        if qid not in survey.relevant(truth):  # only earlier answers decide: all checked
            if qid in answers:
                values = survey.condition_values(
                    {g: survey.questions[g].randomize(truth[g]) for g in survey.gates if g in truth}
                )
                raise ClientError(
                    f"question {qid!r} is {survey.why_skipped(qid, values)}; leave its answer out"
                )
            continue
        if qid not in answers:
            rule = (
                "the answers before it make it relevant"
                if question.condition is not None
                else "every question must be answered"
            )
            raise ClientError(
                f"question {qid!r} ({question.text}) has no answer; {rule}, with "
                f"{question.answer_hint}"
            )
        try:
            truth[qid] = question.normalize(answers[qid])
        except SurveyError as exc:
            raise ClientError(f"question {qid!r}: {str(exc).removeprefix(qid + ': ')}") from None
    return truth
