"""What researchers and respondents do to surveys, over a Store: one service function per action
(results and their CSV, the reports export, breakdown, crosstab, regression, invitations, closing,
and planning one: margin, power, a series' waves), called alike by the API, the dashboard and the
CLI with parameters parsed by params.py.

Every researcher function takes `who` (an access.Principal), passes the one rule of access.py
before any work, and appends what it did to the audit log (audit.py) after it succeeded
(docs/accounts.md); the respondent functions (published, enroll) are public. Plain functions
without Flask or HTTP; a refusal is an ActionError saying what kind it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from deniable.aggregator import access, audit, credentials, stats
from deniable.aggregator.access import Principal
from deniable.aggregator.gateway import keys as gateway_keys
from deniable.aggregator.params import ParamError, parse_confidence, parse_count, parse_number
from deniable.aggregator.refusals import (  # noqa: F401  (Refusal re-exported)
    ActionError,
    Refusal,
    not_found,
    survey_or_404,
)
from deniable.aggregator.stats import AnalysisError, planning, power, series_planning
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
from deniable.aggregator.store.survey_cache import SurveyCache
from deniable.shared import i18n, signing
from deniable.shared.canonical import canonical_json
from deniable.shared.errors import DeniableError, ReportError, SurveyError
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


def stored_bytes(survey: Survey) -> int:
    """The survey's size as stored (its canonical JSON), which DENIABLE_MAX_SURVEY_BYTES bounds."""
    return len(canonical_json(survey.to_dict()))


def check_survey_limits(survey: Survey, limits: Limits = DEFAULT_LIMITS) -> None:
    """SurveyError (422) naming the limit and its setting if the survey is larger as stored,
    has more questions, more sketch counters in all, or text candidates needing a larger
    decoder than `limits` allow: checked before anything is stored or decoded."""
    questions = list(survey.questions.values())
    counters = sum(q.k for q in questions if q.kind.rows == "candidates")
    stored = stored_bytes(survey)
    try:
        check(
            stored,
            limits,
            "max_survey_bytes",
            f"the survey is {stored:,} bytes as stored (its questions, options and "
            "translations); shorten or drop some",
        )
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
    stored = canonical_json(survey.to_dict())
    created = store.create_survey(
        survey.id,
        stored.decode("utf-8"),
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


#: What the audit log calls a read of the results: as shown, or downloaded as CSV.
ResultsAction = Literal["results", "results.csv"]


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
    action: ResultsAction = "results",
) -> SurveyResults:
    """The results of a survey (a SurveyResults), from its tallies (cost independent of the number of
    reports); `candidates` adds rows to its text questions (ActionError invalid if a sketch cannot
    tell them apart, too-large if their decoder is over `limits`). A survey with a design, or
    `weights` (a weights table's CSV), is weighted unless `weighted` is false. The edges format
    it (`to_dict()`, `to_csv()`, `summary()`); `action` is what the audit log records: the
    results read, or "results.csv" for the CSV download."""
    record = access.authorize(store, who, survey_id, "results")
    doc = _results(
        store, record, confidence, simultaneous, candidates, limits, cache, weights, weighted
    )
    params = {"confidence": confidence, "simultaneous": simultaneous, "candidates": candidates}
    audit.record(store, who, survey_id, action, params)
    return doc


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


# -- planning a survey: the planners behind service functions ---------------------------------
# A value comes as text (a form field, a query string) or as a number (a CLI option), parsed
# once with params.py, so the dashboard's forms and `deniable-aggregator plan` read the same
# numbers the same way and refuse a bad one with the same words (docs/statistics.md, "Planning"
# and "Power"): an unreadable value is a ParamError naming the field, a value the planner
# refuses (an epsilon out of range, a margin no n reaches) ActionError invalid in the planner's
# words. No survey, no store and no principal: planning reads nothing and is not logged.

#: The most digits of an option count (a survey has far fewer options).
OPTION_DIGITS = 6


def _planned(run: Callable[[], T]) -> T:
    """The planner's answer; its refusal (PlanError, PowerError...) as ActionError invalid."""
    try:
        return run()
    except ActionError:
        raise
    except (ValueError, DeniableError) as exc:
        raise ActionError("invalid", str(exc)) from None


def _given(value: T | None, name: str, example: str) -> T:
    if value is None:
        raise ParamError(f"{name}: missing; give one, like {example}")
    return value


def parse_sketch(value: str | Sequence[int] | None) -> tuple[int, ...] | None:
    """A sketch's shape: KxM (hash functions x columns) or, for rappor, BITSxHASHESxCOHORTS."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        return tuple(value)
    parts = [part.strip() for part in value.lower().split("x")]
    if len(parts) not in (2, 3) or not all(p.isdigit() and len(p) <= 6 for p in parts):
        raise ParamError(f"sketch: expected KxM, like 16x1024 (rappor: 32x2x16), got {value!r}")
    return tuple(int(p) for p in parts)


def margin_plan(
    epsilon: object,
    *,
    margin: object = None,
    respondents: object = None,
    options: object = 2,
    confidence: object = None,
    mechanism: str | None = None,
    width: object = None,
    sketch: str | Sequence[int] | None = None,
) -> planning.Plan:
    """Respondents needed for `margin` (or the margin `respondents` buy) at `epsilon`, worst
    case, per mechanism (stats/planning.py)."""
    level = parse_confidence(confidence, 0.95)
    arguments = {
        "margin": parse_number(margin, "margin", "0.05"),
        "respondents": parse_count(respondents, "respondents", "1000"),
        "options": _given(
            parse_count(options, "options", "2", digits=OPTION_DIGITS), "options", "2"
        ),
        "confidence": level,
        "mechanism": mechanism or None,
        "width": parse_count(width, "range", "30 (max - min)", digits=10),
        "sketch": parse_sketch(sketch),
    }
    epsilon_value = _given(parse_number(epsilon, "epsilon", "1"), "epsilon", "1")
    return _planned(lambda: planning.plan(epsilon_value, **arguments))


def power_plan(
    test: str,
    share: str,
    *,
    mechanism: str | None = None,
    epsilon: object = None,
    p_star: str | None = None,
    q_star: str | None = None,
    control: str | None = None,
    null: str | None = None,
    alpha: str = "0.05",
    one_sided: bool = False,
    n: object = None,
    target: str | None = None,
) -> power.PowerResult:
    """The power of `test` at `n` respondents (per group), or without n the smallest n reaching
    the `target` power (stats/power.py, as rr's power.rr.test). The design is (`p_star`,
    `q_star`) when given, else `mechanism`'s (the first binary design by default) at
    `epsilon`; probabilities are decimals or fractions like 5/6."""

    def probability(name: str, text: str | None) -> float | None:
        return None if text is None or not text.strip() else power.parse_probability(name, text)

    def run() -> power.PowerResult:
        if p_star is not None and q_star is not None:
            design = (power.parse_probability("p-star", p_star),
                      power.parse_probability("q-star", q_star))  # fmt: skip
        else:
            name = mechanism or next(iter(power.BINARY))
            design = power.design_of(name, parse_number(epsilon, "epsilon", "1"))
        common = {
            "p_star": design[0],
            "q_star": design[1],
            "control": probability("control", control),
            "null": probability("null", null),
            "alpha": power.parse_probability("alpha", alpha),
            "one_sided": one_sided,
        }
        value = power.parse_probability("share", share)
        at = parse_count(n, "n", "400")
        if at is not None:
            return power.power(test, value, n=at, **common)
        wanted = power.parse_probability("power", target if target is not None else "")
        return power.sample_size(test, value, target=wanted, **common)

    return _planned(run)


def series_plan(
    options: object,
    epsilon_perm: object,
    epsilon_1: object,
    *,
    margin: object = None,
    change_margin: object = None,
    trend_margin: object = None,
    waves: object = None,
    confidence: object = None,
    mechanism: str | None = None,
) -> series_planning.SeriesPlan:
    """Respondents per wave of a series for a margin on a wave's share, on a change between
    waves and (with `waves`) on the trend, worst case (stats/series_planning.py)."""
    names = series_planning.SERIES_MECHANISMS
    name = mechanism or names[0]
    if name not in names:
        raise ParamError(
            f"mechanism: expected {', '.join(names[:-1])} or {names[-1]}, got {name[:40]!r}"
        )
    margins = {
        "margin": parse_number(margin, "margin", "0.05"),
        "change_margin": parse_number(change_margin, "change-margin", "0.05"),
        "trend_margin": parse_number(trend_margin, "trend-margin", "0.01"),
    }
    if all(value is None for value in margins.values()):
        raise ParamError(
            "margin: give a margin on a wave's share, on a change between waves or on the "
            "trend, like 0.05"
        )
    k = _given(parse_count(options, "options", "2", digits=OPTION_DIGITS), "options", "2")
    perm = _given(parse_number(epsilon_perm, "epsilon-perm", "2"), "epsilon-perm", "2")
    one = _given(parse_number(epsilon_1, "epsilon-1", "1"), "epsilon-1", "1")
    arguments = {
        **margins,
        "waves": parse_count(waves, "waves", "4", digits=6),
        "confidence": parse_confidence(confidence, 0.95),
        "mechanism": name,
    }
    return _planned(lambda: series_planning.plan_series(k, perm, one, **arguments))
