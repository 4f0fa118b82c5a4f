"""What researchers and respondents do to surveys, over a Store: one service function per action
(results, their CSV, the reports export, breakdown, crosstab, regression, invitations, closing),
called alike by the API, the dashboard and the CLI with parameters parsed by params.py.

Plain functions without Flask; a refusal is an ActionError carrying the HTTP status it maps to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from deniable.aggregator import credentials, stats
from deniable.aggregator.ingest import SurveyCache
from deniable.aggregator.stats import AnalysisError
from deniable.aggregator.stats.analyze import StoredAnswers
from deniable.aggregator.stats.estimate import check_decoder, check_decoders, results_document
from deniable.aggregator.stats.limits import DEFAULT_LIMITS, LimitError, Limits, check
from deniable.aggregator.stats.results import Breakdown, Crosstab, RegressionResults, SurveyResults
from deniable.aggregator.stats.sketch_estimate import DECODERS, SketchDecodeError
from deniable.aggregator.store import Store, SurveyRecord
from deniable.aggregator.store.pool import StoreProvider
from deniable.shared import signing
from deniable.shared.canonical import canonical_json
from deniable.shared.errors import DeniableError, ReportError, SurveyError
from deniable.shared.survey import SURVEY_ID, Survey

T = TypeVar("T")


class ActionError(DeniableError):
    """A refused action; `status` is the HTTP status it answers with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def utc_now() -> str:
    """The current UTC time to the second, as stored for surveys and tokens."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def survey_or_404(store: Store, survey_id: str) -> SurveyRecord:
    """The stored survey, or ActionError 404."""
    record = store.get_survey(survey_id) if SURVEY_ID.fullmatch(survey_id) else None
    if record is None:
        raise ActionError(404, f"no survey {survey_id!r} on this aggregator; check the survey id")
    return record


def published(record: SurveyRecord) -> dict[str, Any]:
    """What GET /api/v1/surveys/<id> answers: the resolved survey and its hash."""
    return {"survey": record.resolved, "survey_hash": record.hash}


def parsed(record: SurveyRecord, cache: SurveyCache | None = None) -> Survey:
    """The record's survey, from the app's `cache` when given."""
    return cache.survey(record) if cache is not None else Survey.from_dict(record.resolved)


def summary(record: SurveyRecord, cache: SurveyCache | None = None) -> dict[str, Any]:
    """A survey as listed for researchers, with its report count and state."""
    survey = parsed(record, cache)
    closes_at = record.resolved.get("closes_at")
    return {
        "id": record.id,
        "title": survey.title,
        "enrollment": survey.enrollment,
        "survey_hash": record.hash,
        "epsilon": survey.epsilon,
        "created_at": record.created_at,
        "closes_at": closes_at,
        "closed": record.closed or survey.is_closed(),
        "closed_at": record.closed_at,
        "report_count": record.report_count,
    }


def check_survey_limits(survey: Survey, limits: Limits = DEFAULT_LIMITS) -> None:
    """SurveyError (422) naming the limit and its setting if the survey has more questions,
    more sketch counters in all, or text candidates needing a larger decoder than `limits`
    allow: checked before anything is stored or decoded."""
    questions = list(survey.questions.values())
    counters = sum(q.k for q in questions if q.kind.rows == "candidates")
    try:
        check(
            len(questions),
            limits.max_questions,
            "max_questions",
            f"questions: the survey has {len(questions):,} questions",
        )
        # A text question's tally is its sketch's counters (the store keeps a row for each,
        # and every batch of reports adds to them): their sum bounds a survey's tallies.
        check(
            counters,
            limits.max_survey_sketch_cells,
            "max_survey_sketch_cells",
            f"questions: the survey's text questions have {counters:,} sketch counters in all "
            "(hcms: 2 k m each, cms: k m + k, rappor: m k + m)",
        )
    except LimitError as exc:
        raise SurveyError(str(exc)) from None
    for i, question in enumerate(questions):
        if question.kind.rows == "candidates" and question.candidates:
            # Every results request decodes the survey's own candidates.
            try:
                check_decoder(question, len(question.candidates), limits, status=422)
            except LimitError as exc:
                raise SurveyError(f"questions[{i}].candidates: {exc}") from None
    try:
        check_decoders(survey, (), limits, status=422)
    except LimitError as exc:
        raise SurveyError(f"questions: {exc}") from None


def create_survey(
    store: Store, doc: object, limits: Limits = DEFAULT_LIMITS
) -> tuple[SurveyRecord, bool]:
    """Validate, resolve and store a survey document; (the record, whether it is new).

    The same document again is not an error (the record comes back, not new); another survey
    under an existing id is ActionError 409. An invalid document, or one over `limits`,
    raises SurveyError."""
    survey = Survey.from_dict(doc)
    check_survey_limits(survey, limits)
    for i, question in enumerate(survey.questions.values()):
        if question.candidates and getattr(question.randomizer, "separates_candidates", False):
            # Results must be computable: a count-mean sketch has to tell the candidates apart
            # (RAPPOR selects among more candidates than its bits resolve, as the paper does).
            try:  # built into the cache: the first results request reuses it
                DECODERS.get(
                    question.randomizer, tuple(question.candidates), limits.decoder_cache_bytes
                )
            except SketchDecodeError as exc:
                raise SurveyError(f"questions[{i}].candidates: {exc}") from None
    resolved = survey.to_dict()
    created = store.create_survey(
        survey.id,
        canonical_json(resolved).decode("utf-8"),
        survey.hash,
        {qid: q.k for qid, q in survey.questions.items()},
        utc_now(),
    )
    record = survey_or_404(store, survey.id)
    if not created and record.hash != survey.hash:
        raise ActionError(
            409,
            f"a different survey {survey.id!r} already exists; surveys never change once "
            "created, so give the new one another id",
        )
    return record, created


def close_survey(store: Store, survey_id: str) -> SurveyRecord:
    """Stop accepting reports (closing twice is fine)."""
    record = store.close_survey(survey_id, utc_now())
    if record is None:
        raise ActionError(404, f"no survey {survey_id!r} on this aggregator; check the survey id")
    return record


def invite(
    store: Store,
    survey_id: str,
    count: object,
    *,
    limit: int = 10_000,
    cache: SurveyCache | None = None,
) -> list[str]:
    """`count` new single-use invitation codes for an invite-only survey (stored hashed)."""
    if isinstance(count, float) and count.is_integer():
        count = int(
            count
        )  # JSON has one number type: 12.0 is the whole number 12, as in JSON Schema
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= limit:
        raise ActionError(422, f"count: expected a whole number from 1 to {limit}, got {count!r}")
    record = survey_or_404(store, survey_id)
    survey = parsed(record, cache)
    if survey.enrollment != "invite":
        raise ActionError(
            409,
            f"survey {survey_id!r} is open to everyone and needs no invitations; "
            'make invite-only surveys with "enrollment": "invite"',
        )
    codes = [credentials.new_invitation_code() for _ in range(count)]
    store.add_invitations(survey_id, [credentials.digest(c) for c in codes], utc_now())
    return codes


def enrollment_proof(survey: Survey, public_key: str, invitation: str) -> bytes:
    """The bytes an enrolling device signs to prove it holds the key."""
    return canonical_json(
        {
            "purpose": "enroll",
            "survey": survey.id,
            "survey_hash": survey.hash,
            "public_key": public_key,
            "invitation": invitation,
        }
    )


def enroll(store: Store, survey_id: str, body: object, *, cache: SurveyCache | None = None) -> bool:
    """Register a public key for an invite-only survey with a code; True if newly enrolled,
    False if the key was enrolled already (no code is spent then)."""
    record = survey_or_404(store, survey_id)
    survey = parsed(record, cache)
    if not isinstance(body, dict):
        raise ActionError(422, "expected a JSON object with public_key, invitation and signature")
    fields = ("public_key", "invitation", "signature")
    for name in fields:
        value = body.get(name)
        if not isinstance(value, str) or not value or len(value) > 256:
            raise ActionError(422, f"{name}: expected a non-empty string")
    extra = sorted(set(body) - set(fields))
    if extra:
        raise ActionError(422, f"{str(extra[0])[:40]}: unknown field; send {', '.join(fields)}")
    if survey.enrollment != "invite":
        raise ActionError(
            409, f"survey {survey_id!r} is open to everyone; answer it without an invitation"
        )
    if record.closed or survey.is_closed():
        raise ActionError(409, f"survey {survey_id!r} is closed; it no longer enrolls anyone")
    public_key, code = body["public_key"], body["invitation"]
    proof = enrollment_proof(survey, public_key, code)
    if not signing.verify(public_key, body["signature"], proof):
        raise ActionError(
            422,
            "signature: does not verify; sign the canonical JSON of purpose, survey, survey_hash, "
            "public_key and invitation with the key being enrolled",
        )
    outcome = store.enroll(
        survey_id, public_key, credentials.digest(credentials.normalize_code(code))
    )
    if outcome == "unknown-code":
        raise ActionError(
            403, "invitation: not a valid invitation code for this survey; check the code"
        )
    if outcome == "used-code":
        raise ActionError(
            409, "invitation: this code was already used; each code enrolls one device"
        )
    return outcome == "enrolled"


def results(
    store: Store,
    survey_id: str,
    *,
    confidence: float = 0.95,
    simultaneous: bool = False,
    candidates: Sequence[str] = (),
    limits: Limits = DEFAULT_LIMITS,
    cache: SurveyCache | None = None,
) -> SurveyResults:
    """The results of a survey (a SurveyResults), from its tallies (cost independent of the number of
    reports); `candidates` adds rows to its text questions (ActionError 422 if a sketch cannot
    tell them apart, 413 if their decoder is over `limits`)."""
    record = survey_or_404(store, survey_id)
    survey = parsed(record, cache)
    n, support = store.tallies(survey_id)
    try:
        return results_document(
            survey,
            n,
            support,
            confidence=confidence,
            simultaneous=simultaneous,
            candidates=candidates,
            limits=limits,
        )
    except LimitError as exc:
        raise ActionError(exc.status, str(exc)) from None
    except ValueError as exc:
        raise ActionError(422, str(exc)) from None


def results_csv(
    store: Store,
    survey_id: str,
    *,
    confidence: float = 0.95,
    simultaneous: bool = False,
    candidates: Sequence[str] = (),
    limits: Limits = DEFAULT_LIMITS,
    cache: SurveyCache | None = None,
) -> str:
    """The results as CSV, one row per option (the same results as `results`)."""
    return results(
        store,
        survey_id,
        confidence=confidence,
        simultaneous=simultaneous,
        candidates=candidates,
        limits=limits,
        cache=cache,
    ).to_csv()


def report_lines(stores: StoreProvider, survey_id: str) -> Iterator[str]:
    """Every stored noisy report of a survey, one JSON object a line, streamed (memory flat in
    their number). The survey is checked now (ActionError 404); the lines are read later from
    a store of their own, so they may be sent after the request that asked for them is gone."""
    with stores.borrowed() as store:
        survey_or_404(store, survey_id)

    def lines() -> Iterator[str]:
        with stores.borrowed() as store:
            for body in store.iter_report_bodies(survey_id):
                yield body + "\n"

    return lines()


def _analysed(run: Callable[[], T]) -> T:
    """Run an analysis on stored reports: a question the survey lacks, one of the wrong kind or
    too few reports is ActionError 422 (the survey exists: 404 would say it does not) saying
    what to ask instead; a request over a limit answers the status its LimitError carries."""
    try:
        return run()
    except (AnalysisError, ReportError) as exc:
        raise ActionError(getattr(exc, "status", 422), str(exc)) from None


def breakdown(
    store: Store,
    survey_id: str,
    question: str,
    by: str,
    *,
    confidence: float = 0.95,
    cache: SurveyCache | None = None,
) -> Breakdown:
    """A randomized question's results within each group of a plain question (stored reports)."""
    survey = parsed(survey_or_404(store, survey_id), cache)
    answers = StoredAnswers(store, survey_id)
    return _analysed(
        lambda: stats.breakdown(survey, answers, question, by, confidence, verify=False)
    )


def crosstab(
    store: Store,
    survey_id: str,
    first: str,
    second: str,
    *,
    confidence: float = 0.95,
    cache: SurveyCache | None = None,
) -> Crosstab:
    """The joint distribution of two questions (stored reports)."""
    survey = parsed(survey_or_404(store, survey_id), cache)
    answers = StoredAnswers(store, survey_id)
    return _analysed(
        lambda: stats.crosstab(survey, answers, first, second, confidence, verify=False)
    )


def regression(
    store: Store,
    survey_id: str,
    formula: str,
    *,
    confidence: float = 0.95,
    limits: Limits = DEFAULT_LIMITS,
    cache: SurveyCache | None = None,
) -> RegressionResults:
    """Fit `outcome ~ covariates` on the stored reports; the formula is data, checked against
    the grammar of stats/formula.py, and the model against `limits`."""
    survey = parsed(survey_or_404(store, survey_id), cache)
    answers = StoredAnswers(store, survey_id)
    return _analysed(
        lambda: stats.regress(survey, answers, formula, confidence, verify=False, limits=limits)
    )
