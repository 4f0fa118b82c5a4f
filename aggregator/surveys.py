"""What researchers and respondents do to surveys, over a Store: one service function per action
(results, their CSV, the reports export, breakdown, crosstab, regression, invitations, closing),
called alike by the API, the dashboard and the CLI with parameters parsed by params.py.

Every researcher function takes `who` (an access.Principal), passes the one rule of access.py
before any work, and appends what it did to the audit log (audit.py) after it succeeded
(docs/accounts.md); the respondent functions (published, enroll) are public. Plain functions
without Flask or HTTP; a refusal is an ActionError saying what kind it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from deniable.aggregator import access, audit, credentials, stats
from deniable.aggregator.access import Principal
from deniable.aggregator.gateway import keys as gateway_keys
from deniable.aggregator.ingest import SurveyCache
from deniable.aggregator.refusals import (  # noqa: F401  (Refusal re-exported)
    ActionError,
    Refusal,
    not_found,
    survey_or_404,
)
from deniable.aggregator.stats import AnalysisError
from deniable.aggregator.stats import waves as stats_waves
from deniable.aggregator.stats.analyze import StoredAnswers
from deniable.aggregator.stats.asked import tally_sizes
from deniable.aggregator.stats.designed import weigh_results
from deniable.aggregator.stats.estimate import check_decoder, check_decoders, results_document
from deniable.aggregator.stats.limits import DEFAULT_LIMITS, LimitError, Limits, check
from deniable.aggregator.stats.results import Breakdown, Crosstab, RegressionResults, SurveyResults
from deniable.aggregator.stats.series_results import SeriesResults
from deniable.aggregator.stats.shuffle_results import with_shuffle
from deniable.aggregator.stats.sketch_estimate import DECODERS, SketchDecodeError
from deniable.aggregator.store import Store, SurveyRecord
from deniable.aggregator.store.pool import StoreProvider
from deniable.shared import i18n, signing
from deniable.shared.canonical import canonical_json
from deniable.shared.errors import ReportError, SurveyError
from deniable.shared.survey import Survey
from deniable.shared.waves import SERIES_ID

T = TypeVar("T")


def utc_now() -> str:
    """The current UTC time to the second, as stored for surveys and tokens."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def published(record: SurveyRecord) -> dict[str, Any]:
    """What GET /api/v1/surveys/<id> answers: the resolved survey and its hash."""
    return {"survey": record.resolved, "survey_hash": record.hash}


def language_notices(record: SurveyRecord) -> list[str]:
    """What a researcher is told when a survey is created: one notice per survey language
    whose product words (buttons, explanations) have no catalog and fall back to English
    (docs/translations.md). The API, the dashboard and the CLI show the same words."""
    return language_notices_of(record.resolved)


def language_notices_of(resolved: dict[str, Any]) -> list[str]:
    """`language_notices` of a resolved survey not stored (yet): `survey import --dry-run`."""
    default = resolved.get("language") or i18n.SOURCE_LANGUAGE
    languages = dict.fromkeys([default, *(resolved.get("translations") or {})])
    return [
        f"the product's own words (buttons, explanations) have no {tag} catalog and are "
        "shown in English"
        for tag in languages
        if isinstance(tag, str) and not i18n.has_catalog(tag)
    ]


def parsed(record: SurveyRecord, cache: SurveyCache | None = None) -> Survey:
    """The record's survey, from the app's `cache` when given."""
    return cache.survey(record) if cache is not None else Survey.from_stored(record.resolved)


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
            limits,
            "max_questions",
            f"questions: the survey has {len(questions):,} questions",
        )
        # A text question's tally is its sketch's counters (the store keeps a row for each,
        # and every batch of reports adds to them): their sum bounds a survey's tallies.
        check(
            counters,
            limits,
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
                check_decoder(question, len(question.candidates), limits, kind="invalid")
            except LimitError as exc:
                raise SurveyError(f"questions[{i}].candidates: {exc}") from None
    try:
        check_decoders(survey, (), limits, kind="invalid")
    except LimitError as exc:
        raise SurveyError(f"questions: {exc}") from None


def list_surveys(
    store: Store, who: Principal, cache: SurveyCache | None = None
) -> list[dict[str, Any]]:
    """The summaries of the surveys `who` may see (GET /api/v1/surveys), oldest first."""
    return [summary(record, cache) for record in access.visible_surveys(store, who)]


def create_survey(
    store: Store, doc: object, limits: Limits = DEFAULT_LIMITS, *, who: Principal
) -> tuple[SurveyRecord, bool]:
    """Validate, resolve and store a survey document, owned by `who`'s account; (the record,
    whether it is new).

    The same document again, from someone who sees that survey, is not an error (the record
    comes back, not new, and nobody's role changes); another survey under an existing id, or
    the same one from someone who does not see it, is ActionError conflict. A principal
    that may not create surveys is ActionError forbidden (access.require_creator). An invalid
    document, or one over `limits`, raises SurveyError."""
    access.require_creator(who)
    survey = Survey.from_dict(gateway_keys.pin(store, doc))  # a relay's key (docs/anonymity.md)
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
        tally_sizes(survey),  # k per question, +1 "asked" slot with a condition
        utc_now(),
        owner=who.account_id,
    )
    record = survey_or_404(store, survey.id)
    if not created and (
        record.hash != survey.hash or access.role_on(store, who, survey.id) is None
    ):
        # The same words whether or not the asker may see the other survey: its id is public
        # (the respondent link), its owners and results are not.
        raise ActionError(
            "conflict",
            f"a survey {survey.id!r} already exists; surveys never change once created, so "
            "give the new one another id",
        )
    if created:
        audit.record(store, who, survey.id, "create", {"title": survey.title})
    return record, created


def close_survey(store: Store, survey_id: str, *, who: Principal) -> SurveyRecord:
    """Stop accepting reports (closing twice is fine); an owner's or an admin's action."""
    access.authorize(store, who, survey_id, "close")
    record = store.close_survey(survey_id, utc_now())
    if record is None:
        raise not_found(survey_id)
    audit.record(store, who, survey_id, "close")
    return record


def invite(
    store: Store,
    survey_id: str,
    count: object,
    *,
    who: Principal,
    limit: int = 10_000,
    cache: SurveyCache | None = None,
) -> list[str]:
    """`count` new single-use invitation codes for an invite-only survey (stored hashed); an
    owner's or an admin's action, logged with the count (never a code)."""
    record = access.authorize(store, who, survey_id, "invite")
    if isinstance(count, float) and count.is_integer():
        count = int(
            count
        )  # JSON has one number type: 12.0 is the whole number 12, as in JSON Schema
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= limit:
        raise ActionError(
            "invalid", f"count: expected a whole number from 1 to {limit}, got {count!r}"
        )
    survey = parsed(record, cache)
    if survey.enrollment != "invite":
        raise ActionError(
            "conflict",
            f"survey {survey_id!r} is open to everyone and needs no invitations; "
            'make invite-only surveys with "enrollment": "invite"',
        )
    codes = [credentials.new_invitation_code() for _ in range(count)]
    store.add_invitations(survey_id, [credentials.digest(c) for c in codes], utc_now())
    audit.record(store, who, survey_id, "invite", {"count": count})
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
        raise ActionError(
            "invalid", "expected a JSON object with public_key, invitation and signature"
        )
    fields = ("public_key", "invitation", "signature")
    for name in fields:
        value = body.get(name)
        if not isinstance(value, str) or not value or len(value) > 256:
            raise ActionError("invalid", f"{name}: expected a non-empty string")
    extra = sorted(set(body) - set(fields))
    if extra:
        raise ActionError(
            "invalid", f"{str(extra[0])[:40]}: unknown field; send {', '.join(fields)}"
        )
    if survey.enrollment != "invite":
        raise ActionError(
            "conflict", f"survey {survey_id!r} is open to everyone; answer it without an invitation"
        )
    if record.closed or survey.is_closed():
        raise ActionError(
            "conflict", f"survey {survey_id!r} is closed; it no longer enrolls anyone"
        )
    public_key, code = body["public_key"], body["invitation"]
    proof = enrollment_proof(survey, public_key, code)
    if not signing.verify(public_key, body["signature"], proof):
        raise ActionError(
            "invalid",
            "signature: does not verify; sign the canonical JSON of purpose, survey, survey_hash, "
            "public_key and invitation with the key being enrolled",
        )
    outcome = store.enroll(
        survey_id, public_key, credentials.digest(credentials.normalize_code(code))
    )
    if outcome == "unknown-code":
        raise ActionError(
            "forbidden", "invitation: not a valid invitation code for this survey; check the code"
        )
    if outcome == "used-code":
        raise ActionError(
            "conflict", "invitation: this code was already used; each code enrolls one device"
        )
    return outcome == "enrolled"


def _results(
    store: Store,
    record: SurveyRecord,
    confidence: float,
    simultaneous: bool,
    candidates: Sequence[str],
    limits: Limits,
    cache: SurveyCache | None,
    weights: str | None = None,
    weighted: bool = True,
) -> SurveyResults:
    """The results of an authorized survey, from its tallies; weighted by its design (and a
    weights table's CSV) from its stored reports unless `weighted` is false."""
    survey = parsed(record, cache)
    n, support = store.tallies(record.id)
    try:
        doc = results_document(
            survey,
            n,
            support,
            confidence=confidence,
            simultaneous=simultaneous,
            candidates=candidates,
            limits=limits,
        )
        weighed = weigh_results(
            survey,
            StoredAnswers(store, record.id),
            doc,
            weights,
            weighted,
            confidence=confidence,
            simultaneous=simultaneous,
            verify=False,
            candidates=candidates,
        )
        if survey.route is None:
            return weighed
        return with_shuffle(weighed, survey, store.smallest_batch(record.id))  # relay batches
    except LimitError as exc:
        raise ActionError(exc.kind, str(exc)) from None
    except ValueError as exc:
        raise ActionError("invalid", str(exc)) from None


def results(
    store: Store,
    survey_id: str,
    *,
    who: Principal,
    confidence: float = 0.95,
    simultaneous: bool = False,
    candidates: Sequence[str] = (),
    limits: Limits = DEFAULT_LIMITS,
    cache: SurveyCache | None = None,
    weights: str | None = None,
    weighted: bool = True,
) -> SurveyResults:
    """The results of a survey (a SurveyResults), from its tallies (cost independent of the number of
    reports); `candidates` adds rows to its text questions (ActionError invalid if a sketch cannot
    tell them apart, too-large if their decoder is over `limits`). A survey with a design, or
    `weights` (a weights table's CSV), is weighted unless `weighted` is false."""
    record = access.authorize(store, who, survey_id, "results")
    doc = _results(
        store, record, confidence, simultaneous, candidates, limits, cache, weights, weighted
    )
    params = {"confidence": confidence, "simultaneous": simultaneous, "candidates": candidates}
    audit.record(store, who, survey_id, "results", params)
    return doc


def results_csv(
    store: Store,
    survey_id: str,
    *,
    who: Principal,
    confidence: float = 0.95,
    simultaneous: bool = False,
    candidates: Sequence[str] = (),
    limits: Limits = DEFAULT_LIMITS,
    cache: SurveyCache | None = None,
    weights: str | None = None,
    weighted: bool = True,
) -> str:
    """The results as CSV, one row per option (the same results as `results`)."""
    record = access.authorize(store, who, survey_id, "results")
    text = _results(
        store, record, confidence, simultaneous, candidates, limits, cache, weights, weighted
    ).to_csv()
    params = {"confidence": confidence, "simultaneous": simultaneous, "candidates": candidates}
    audit.record(store, who, survey_id, "results.csv", params)
    return text


def report_lines(stores: StoreProvider, survey_id: str, *, who: Principal) -> Iterator[str]:
    """Every stored noisy report of a survey, one JSON object a line, streamed (memory flat in
    their number). The rule is checked and the export logged now (ActionError not-found or
    forbidden); the lines are read later from a store of their own, so they may be sent after
    the request that asked for them is gone."""
    with stores.borrowed() as store:
        access.authorize(store, who, survey_id, "export")
        audit.record(store, who, survey_id, "reports.jsonl")

    def lines() -> Iterator[str]:
        with stores.borrowed() as store:
            for body in store.iter_report_bodies(survey_id):
                yield body + "\n"

    return lines()


def _analysed(
    store: Store,
    who: Principal,
    survey_id: str,
    cache: SurveyCache | None,
    run: Callable[[Survey, StoredAnswers], T],
    action: str,
    params: dict[str, Any],
) -> T:
    """Run an analysis on a survey's stored reports, for a principal who may analyse it, and
    log it: a question the survey lacks, one of the wrong kind or too few reports is
    ActionError invalid (the survey exists: not-found would say it does not) saying what to ask
    instead; a request over a limit keeps the kind its LimitError carries."""
    survey = parsed(access.authorize(store, who, survey_id, "analyze"), cache)
    try:
        doc = run(survey, StoredAnswers(store, survey_id))
    except (AnalysisError, ReportError) as exc:
        raise ActionError(getattr(exc, "kind", "invalid"), str(exc)) from None
    audit.record(store, who, survey_id, action, params)
    return doc


def breakdown(
    store: Store,
    survey_id: str,
    question: str,
    by: str,
    *,
    who: Principal,
    confidence: float = 0.95,
    cache: SurveyCache | None = None,
    weights: str | None = None,
    weighted: bool = True,
    cuts: Sequence[int] = (),
) -> Breakdown:
    """A randomized question's results within each group of a plain question (stored reports;
    a plain integer in bands cut at `cuts`), weighted as `results` is."""
    return _analysed(
        store,
        who,
        survey_id,
        cache,
        lambda survey, answers: stats.breakdown(
            survey,
            answers,
            question,
            by,
            confidence,
            verify=False,
            weights=weights,
            weighted=weighted,
            cuts=cuts,
        ),
        "breakdown",
        {
            "question": question,
            "by": by,
            "confidence": confidence,
            **({"cuts": list(cuts)} if cuts else {}),
        },
    )


def crosstab(
    store: Store,
    survey_id: str,
    first: str,
    second: str,
    *,
    who: Principal,
    confidence: float = 0.95,
    cache: SurveyCache | None = None,
    weights: str | None = None,
    weighted: bool = True,
) -> Crosstab:
    """The joint distribution of two questions (stored reports), weighted as `results` is."""
    return _analysed(
        store,
        who,
        survey_id,
        cache,
        lambda survey, answers: stats.crosstab(
            survey,
            answers,
            first,
            second,
            confidence,
            verify=False,
            weights=weights,
            weighted=weighted,
        ),
        "crosstab",
        {"first": first, "second": second, "confidence": confidence},
    )


def regression(
    store: Store,
    survey_id: str,
    formula: str,
    *,
    who: Principal,
    confidence: float = 0.95,
    limits: Limits = DEFAULT_LIMITS,
    cache: SurveyCache | None = None,
    weights: str | None = None,
    weighted: bool = True,
) -> RegressionResults:
    """Fit `outcome ~ covariates` on the stored reports; the formula is data, checked against
    the grammar of stats/formula.py, and the model against `limits`; weighted as `results`
    is (the survey's design, a weights table's CSV)."""
    return _analysed(
        store,
        who,
        survey_id,
        cache,
        lambda survey, answers: stats.regress(
            survey,
            answers,
            formula,
            confidence,
            verify=False,
            limits=limits,
            weights=weights,
            weighted=weighted,
        ),
        "regression",
        {"formula": formula, "confidence": confidence},
    )


# -- a series of waves (docs/surveys.md#waves) -------------------------------------------------
# A series is the surveys naming it in "series", each a wave of its own. A principal sees the
# waves it may read the results of; a series with none of those is 404, worded as an unknown
# series whether or not other waves exist. Each wave is estimated as its survey (_results),
# and stats/waves.py adds the changes and the trend.


def _no_series(series_id: str) -> ActionError:
    return ActionError(
        "not-found",
        f"no series {series_id!r} on this aggregator that you may read; check the series id "
        '(the surveys\' "series")',
    )


def series_waves(store: Store, series_id: str, *, who: Principal) -> list[SurveyRecord]:
    """The surveys of a series whose results `who` may read, in wave order: ActionError
    not-found when there are none, conflict when two of them claim one wave number."""
    if not isinstance(series_id, str) or not SERIES_ID.fullmatch(series_id):
        raise _no_series(series_id)
    records = [
        record
        for record in access.visible_surveys(store, who)
        if record.resolved.get("series") == series_id
        and access.may(who, access.role_on(store, who, record.id), "results")
    ]
    if not records:
        raise _no_series(series_id)
    records.sort(key=lambda r: (int(r.resolved["wave"]), r.id))
    for a, b in zip(records, records[1:], strict=False):
        if a.resolved["wave"] == b.resolved["wave"]:
            raise ActionError(
                "conflict",
                f"series {series_id!r}: surveys {a.id!r} and {b.id!r} are both wave "
                f"{a.resolved['wave']}; give each wave its own number",
            )
    if len(records) > stats_waves.MAX_WAVES:
        raise ActionError(
            "too-large",
            f"series {series_id!r} has {len(records)} waves; at most {stats_waves.MAX_WAVES}",
        )
    return records


def series_results(
    store: Store,
    series_id: str,
    *,
    who: Principal,
    confidence: float = 0.95,
    limits: Limits = DEFAULT_LIMITS,
    cache: SurveyCache | None = None,
    candidates: Sequence[str] = (),
) -> SeriesResults:
    """The results of a series: each wave's results JSON, the changes between consecutive
    waves and a linear trend per question option (docs/statistics.md#waves)."""
    records = series_waves(store, series_id, who=who)
    waves = [
        stats_waves.Wave(
            int(record.resolved["wave"]),
            record.id,
            _results(store, record, confidence, False, candidates, limits, cache).to_dict(),
        )
        for record in records
    ]
    try:
        doc = stats_waves.series_results(series_id, waves, confidence)
    except ValueError as exc:
        raise ActionError("invalid", str(exc)) from None
    for record in records:
        audit.record(store, who, record.id, "series-results", {"series": series_id})
    return doc
