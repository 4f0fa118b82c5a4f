"""Survey documents: validation, resolution of mechanisms, the resolved form and its hash.

`Survey.from_dict` accepts what a researcher writes (a question may give just an epsilon) and
the resolved form (`to_dict()`, every mechanism's exact parameters spelled out); resolving a
resolved form changes nothing, so the client and the aggregator compute the same hash.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from fractions import Fraction
from functools import cached_property
from types import MappingProxyType
from typing import Any

from deniable.shared import ballot, conditions, waves
from deniable.shared import mechanisms as mech
from deniable.shared.canonical import canonical_json, is_unicode, sha256_hex
from deniable.shared.design import Design
from deniable.shared.errors import SurveyError
from deniable.shared.languages import (
    DEFAULT_LANGUAGE,
    QuestionText,
    SurveyText,
    Translation,
    best_language,
    canonical_tag,
    parse_translations,
)
from deniable.shared.longitudinal import PROTOCOLS
from deniable.shared.mechanisms import Encoded, Mechanism
from deniable.shared.probability import RandomBytes, format_probability
from deniable.shared.questions import (
    EPSILON_TOLERANCE,
    MAX_OPTIONS,  # noqa: F401 (the planner's bound on options)
    QUESTION_TYPES,
    SKETCH_DEFAULTS,
    QuestionType,
    Resolved,
    fail,
    has_control,
    question_type,
    stored_survey_texts,
)
from deniable.shared.route import KEYS_FIELD, RELAY_FIELD, Route, parse_route
from deniable.shared.sketches import Sketch, SketchAnswer
from deniable.shared.text import MAX_TEXT_ANSWER, normalize_text

_has_control = has_control
#: An answer a report does not hold (a memo key apart from any value, null included).
_ABSENT = object()
#: A gate with no answer (a question not asked, or not answered yet).
_UNANSWERED = object()

SURVEY_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
QUESTION_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
#: Distinct noisy answers a question remembers the supported options of (Question.support_of).
SUPPORT_MEMO = 4096
MAX_QUESTIONS = 100
MAX_TEXT = 2000

_SURVEY_FIELDS = {
    "id",
    "title",
    "description",
    "enrollment",
    "device",
    "closes_at",
    "questions",
    "epsilon",
    "design",
    "language",
    "translations",
    waves.SERIES_FIELD,
    waves.WAVE_FIELD,
    RELAY_FIELD,
    KEYS_FIELD,
}
#: Where a survey is answered (docs/surveys.md): each respondent's own device, the default, or
#: one device passed from respondent to respondent (`"device": "shared"`).
DEVICES = ("personal", "shared")
_QUESTION_FIELDS = {
    "id",
    "text",
    "type",
    "options",
    "min",
    "max",
    "epsilon",
    "mechanism",
    "p_star",
    "q_star",
    "candidates",
    "hint",
    "note",
    "relevant",
    ballot.SHARE_FIELD,
    waves.LONGITUDINAL_FIELD,
    *PROTOCOLS,  # a longitudinal question's rounds, under its protocol's name
}
#: The mechanisms each question type allows, the default first (docs/surveys.md).
TYPE_MECHANISMS = {name: kind.mechanisms for name, kind in QUESTION_TYPES.items()}


_fail = fail


def _text(doc: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = doc.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(f"{where}{key}", f"expected a non-empty string, got {value!r}")
    if len(value) > MAX_TEXT:
        raise _fail(f"{where}{key}", f"at most {MAX_TEXT} characters, got {len(value)}")
    if not is_unicode(value):
        raise _fail(f"{where}{key}", "not valid Unicode (an unpaired surrogate); send UTF-8 text")
    if _has_control(value):
        raise _fail(f"{where}{key}", f"control characters are not text, got {value[:80]!r}")
    return value


def parse_timestamp(value: object, *, field: str) -> datetime:
    """An RFC 3339 timestamp with a time zone (e.g. 2026-12-31T00:00:00Z), as UTC."""
    if not isinstance(value, str):
        raise SurveyError(f"{field}: expected a time like 2026-12-31T00:00:00Z, got {value!r}")
    try:
        # Earlier versions stored years before 1000 unpadded ("1-01-01T00:00:00Z").
        moment = datetime.fromisoformat(_UNPADDED_YEAR.sub(_pad_year, value, count=1))
    except ValueError:
        raise SurveyError(
            f"{field}: expected a time like 2026-12-31T00:00:00Z, got {value!r}"
        ) from None
    if moment.tzinfo is None:
        raise SurveyError(f"{field}: give a time zone (e.g. a trailing Z), got {value!r}")
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise SurveyError(f"{field}: {value!r} is out of range in UTC") from None


_UNPADDED_YEAR = re.compile(r"\A([0-9]{1,3})-")


def _pad_year(match: re.Match[str]) -> str:
    return f"{int(match.group(1)):04d}-"


def format_timestamp(moment: datetime) -> str:
    """UTC, to the second, with a trailing Z (the year in four digits, as RFC 3339 wants)."""
    m = moment.astimezone(UTC)
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}Z"


@dataclass(frozen=True, eq=False)
class Question:
    """One resolved question: its options and the mechanism that randomizes its answer."""

    id: str
    text: str
    type: str
    _options: tuple[str, ...]
    randomizer: Mechanism | Sketch
    requested: str = field(default="")
    low: int | None = None
    high: int | None = None
    #: Help text shown under the question, and text shown before it (docs/surveys.md).
    hint: str | None = None
    note: str | None = None
    #: The skip-logic condition's text (docs/surveys.md#skip-logic), None when always asked.
    relevant: str | None = None
    #: The parsed condition, checked against the survey (set by Survey.from_dict).
    condition: conditions.Condition | None = field(default=None, repr=False)
    #: The share of devices asked this randomized question directly (a split ballot,
    #: docs/surveys.md#split-ballot), exact; None when every device randomizes it.
    direct_share: Fraction | None = None

    @cached_property
    def direct_question(self) -> Question:
        """The same question with its type's plain mechanism: how the direct arm of a split
        ballot is asked, sent, validated and estimated (sent exactly as answered)."""
        plain = self.kind.sent_as_answered(self._options, self.low, self.high, "")
        return replace(self, randomizer=plain, requested="none", direct_share=None)

    def arm_question(self, arm: str | None) -> Question:
        """The question as asked in `arm` (ballot.DIRECT: its direct question; else itself)."""
        return self.direct_question if arm == ballot.DIRECT else self

    @cached_property
    def kind(self) -> QuestionType:
        """The question's type (deniable.shared.questions): what differs between types."""
        return QUESTION_TYPES[self.type]

    @cached_property
    def _index(self) -> dict[str, int]:
        return {label: i for i, label in enumerate(self._options)}

    @property
    def options(self) -> list[str]:
        """Option labels in order; a binary question has ["no", "yes"], an integer none."""
        return list(self._options)

    @property
    def k(self) -> int:
        """The tally slots: the options, or for an integer question the reports 0 and 1
        (onebit) or each value from min to max (plain), or a text question's sketch counters."""
        if isinstance(self.randomizer, Sketch):
            return self.randomizer.slots
        return self.randomizer.k

    @property
    def candidates(self) -> list[str]:
        """A text question's candidate strings (normalized), estimated in its results."""
        return self.kind.candidates(self)

    def text_of(self, value: object) -> str:
        """A text question's true answer, normalized (docs/surveys.md); SurveyError if empty."""
        if not isinstance(value, str) or not is_unicode(value) or _has_control(value):
            raise SurveyError(f"{self.id}: {value!r} is not an answer; give a word or a phrase")
        text = normalize_text(value)
        if not text or len(text) > MAX_TEXT_ANSWER:
            raise SurveyError(
                f"{self.id}: {value!r} is not an answer; give a word or a phrase of 1 to "
                f"{MAX_TEXT_ANSWER} characters"
            )
        return text

    @property
    def mechanism(self) -> str:
        """The resolved mechanism's name ("rr", "coins", "grr" or "oue"; never "auto")."""
        return self.randomizer.name

    @property
    def epsilon(self) -> float | None:
        """The question's privacy loss; None for a plain (`none`) question, sent as answered;
        a longitudinal question's permanent round's (epsilon_perm), the most it costs in one
        wave (docs/surveys.md#waves)."""
        return self.randomizer.epsilon

    @property
    def longitudinal(self) -> Any:
        """The chained mechanism (deniable.shared.longitudinal) of a question repeated across
        a series' waves with memoized answers, else None."""
        return self.randomizer if getattr(self.randomizer, "longitudinal", False) else None

    @property
    def plain(self) -> bool:
        """Whether the answer is sent exactly as given (mechanism `none`), not randomized."""
        return self.randomizer.plain

    @property
    def p_star(self) -> float:
        return float(self.randomizer.p_star)

    @property
    def q_star(self) -> float:
        return float(self.randomizer.q_star)

    def index_of(self, value: object) -> int:
        """The option index of a true answer: a label or an index (and yes/no, True/False,
        1/0 for binary questions). Raises SurveyError saying what is allowed."""
        if isinstance(value, str) and value in self._index:
            return self._index[value]
        if isinstance(value, bool) and self.kind.accepts_bool():
            return int(value)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < self.k:
            return value
        if isinstance(value, str):
            if value in self._options:
                return self._options.index(value)
            folded = [o.casefold() for o in self._options]
            if value.strip().casefold() in folded:
                return folded.index(value.strip().casefold())
            digits = value.strip()
            if digits.isascii() and digits.isdigit() and len(digits) <= 4 and int(digits) < self.k:
                return int(digits)  # ASCII only: "²".isdigit() is true, int("²") fails
        allowed = ", ".join(repr(o) for o in self._options)
        raise SurveyError(
            f"{self.id}: {value!r} is not an answer; give one of {allowed} or an index 0-{self.k - 1}"
        )

    def offset_of(self, value: object) -> int:
        """An integer question's true answer (an int, or its digits as text) minus min."""
        assert self.low is not None and self.high is not None
        number: object = value
        if isinstance(value, str):
            text = value.strip()
            digits = text.removeprefix("-").removeprefix("+")
            if digits.isascii() and digits.isdigit() and len(digits) <= 10:
                number = int(text)
        if type(number) is not int or not self.low <= number <= self.high:
            raise SurveyError(
                f"{self.id}: {value!r} is not an answer; give a whole number from "
                f"{self.low} to {self.high}"
            )
        return number - self.low

    def selection_of(self, value: object) -> frozenset[int]:
        """A multi question's true answer: the option labels or indices selected (a list, or
        text with commas between them; empty for none) as a set of option indices."""
        if isinstance(value, str):
            if value.strip() in self._index or value.strip().casefold() in self._folded:
                items: list[object] = [value]
            else:
                items = [part for part in value.split(",") if part.strip()]
        elif isinstance(value, list | tuple | set | frozenset):
            items = list(value)
        else:
            allowed = ", ".join(repr(o) for o in self._options)
            raise SurveyError(
                f"{self.id}: {value!r} is not an answer; give a list of options from {allowed} "
                "(empty for none)"
            )
        return frozenset(self.index_of(item) for item in items)

    @cached_property
    def _folded(self) -> list[str]:
        return [o.casefold() for o in self._options]

    def truth_of(self, value: object) -> int | frozenset[int] | str:
        """What the mechanism randomizes for the true answer `value`: an option index, an
        integer's offset from min, a multi question's set of selected indices, or a text
        question's normalized text."""
        return self.kind.truth_of(self, value)

    def normalize(self, value: object) -> int | frozenset[int] | str:
        """A true answer in the form `truth_of` reads back unchanged: an option index, an
        integer's value, or the set of selected indices. SurveyError says what is allowed."""
        return self.kind.normalize(self, value)

    @property
    def answer_hint(self) -> str:
        """What a true answer to this question looks like, in words."""
        return self.kind.answer_hint(self)

    def randomize(
        self, value: object, *, random_bytes: RandomBytes | None = None
    ) -> Encoded | SketchAnswer:
        """The encoded noisy answer for the true answer `value`, drawn on this device from
        `random_bytes` (n -> n bytes; the secure source by default; docs/randomness.md)."""
        truth = self.truth_of(value)
        return self.randomizer.randomize(truth, random_bytes=random_bytes)  # type: ignore[arg-type]

    def validate(self, encoded: object) -> Encoded | SketchAnswer:
        """`encoded` if it is a valid noisy answer to this question, else SurveyError."""
        try:
            return self.randomizer.validate(encoded)
        except ValueError as exc:
            raise SurveyError(f"{self.id}: {exc}") from None

    def supports(self, encoded: Encoded | SketchAnswer) -> tuple[int, ...]:
        """The option indices (a text question: the sketch counters) a valid answer adds to."""
        return self.randomizer.supports(encoded)  # type: ignore[arg-type]

    @cached_property
    def _support_memo(self) -> dict[Encoded, tuple[int, ...]]:
        return {}

    def support_of(self, encoded: object) -> tuple[int, ...]:
        """The options a noisy answer supports once it is checked valid (else SurveyError).

        Remembered per answer (at most SUPPORT_MEMO of them): a question has few distinct
        noisy answers (2, k, or 2^k for oue), and the aggregator checks each report's."""
        memo = self._support_memo
        # Exact types only: True == 1, but a bool is no answer.
        keyed = type(encoded) is int or type(encoded) is str
        found = memo.get(encoded) if keyed else None  # type: ignore[call-overload]
        if found is not None:
            return found
        support = self.randomizer.supports(self.validate(encoded))  # type: ignore[arg-type]
        if keyed and len(memo) < SUPPORT_MEMO:
            memo[encoded] = support  # type: ignore[index]
        return support

    def to_dict(self) -> dict[str, Any]:
        """The resolved question: mechanism, its exact parameters, epsilon, p* and q* (a plain
        question has no parameters and a null epsilon)."""
        mechanism: dict[str, Any] = {"mechanism": self.mechanism}
        if not self.plain:
            mechanism[self.mechanism] = self.randomizer.params_text()
        if self.longitudinal is not None:  # the two epsilons its rounds follow from
            mechanism[waves.LONGITUDINAL_FIELD] = waves.longitudinal_doc(self)
        mechanism["epsilon"] = self.epsilon
        mechanism["p_star"] = format_probability(self.randomizer.p_star)
        mechanism["q_star"] = format_probability(self.randomizer.q_star)
        doc = self.kind.to_dict(self, mechanism)
        # Absent when not given: older surveys keep their hash.
        for key in ("hint", "note", "relevant"):
            if getattr(self, key) is not None:
                doc[key] = getattr(self, key)
        if self.direct_share is not None:  # absent when not a split ballot: hashes unchanged
            doc[ballot.SHARE_FIELD] = format_probability(self.direct_share)
        return doc

    @classmethod
    def from_dict(cls, doc: object, *, where: str = "") -> Question:
        """Validate and resolve one question document."""
        if not isinstance(doc, dict):
            raise _fail(where.rstrip("."), f"expected an object, got {doc!r}")
        allowed = _QUESTION_FIELDS | set(mech.PARAMETERS) | set(SKETCH_DEFAULTS)
        unknown = sorted(set(doc) - allowed)
        if unknown:
            raise _fail(
                f"{where}{unknown[0]}",
                f"unknown field; allowed: {', '.join(sorted(allowed))}",
            )
        qid = doc.get("id")
        if not isinstance(qid, str) or not QUESTION_ID.fullmatch(qid):
            raise _fail(
                f"{where}id",
                f"expected 1-64 of a-z, 0-9, '-' and '_', starting with a letter or digit, got {qid!r}",
            )
        text = _text(doc, "text", where)
        hint = _text(doc, "hint", where, required=False)
        note = _text(doc, "note", where, required=False)
        relevant = doc.get("relevant")
        if relevant is not None:
            if not isinstance(relevant, str) or not relevant.strip():
                raise _fail(
                    f"{where}relevant",
                    f"expected a condition such as smokes == 'yes', got {relevant!r:.60}",
                )
            if len(relevant) > conditions.MAX_CONDITION:
                raise _fail(
                    f"{where}relevant",
                    f"at most {conditions.MAX_CONDITION} characters, got {len(relevant)}",
                )
            if not is_unicode(relevant) or _has_control(relevant):
                raise _fail(f"{where}relevant", "control characters are not part of a condition")
        kind = question_type(doc.get("type"), where)
        if waves.LONGITUDINAL_FIELD in doc:  # docs/surveys.md#waves (binary, categorical)
            chain = waves.resolve(doc, kind, where)
            r = Resolved(kind.options_of(doc, where), chain, chain.name)
        else:
            r = kind.resolve(doc, where)
        share = _direct_share(doc, kind, r, where)
        return cls(
            qid,
            text or "",
            kind.name,
            r.options,
            r.randomizer,
            r.requested,
            r.low,
            r.high,
            hint,
            note,
            relevant,
            direct_share=share,
        )


def _direct_share(
    doc: Mapping[str, Any], kind: QuestionType, r: Any, where: str
) -> Fraction | None:
    """A question's `direct_share` (docs/surveys.md#split-ballot), checked: only on a
    randomized question of a type that can be split (not text), strictly inside (0, 1)."""
    raw = doc.get(ballot.SHARE_FIELD)
    if raw is None:
        return None
    name = f"{where}{ballot.SHARE_FIELD}"
    if kind.no_split_ballot is not None:
        raise _fail(
            name,
            f"a {kind.name} question cannot be a split ballot: {kind.no_split_ballot}; "
            "remove direct_share",
        )
    if r.randomizer.plain:
        raise _fail(
            name,
            "a plain question (mechanism none) is already asked directly; a split ballot "
            "compares a randomized question with its direct form, remove direct_share",
        )
    try:  # the direct arm is sent as answered (a plain integer is counted per value)
        kind.sent_as_answered(r.options, r.low, r.high, where)
    except SurveyError as exc:
        raise _fail(name, f"its direct arm would be a plain {kind.name}: {exc}") from None
    try:
        return ballot.parse_share(raw, field=name)
    except ValueError as exc:
        raise SurveyError(str(exc)) from None


@dataclass(frozen=True, eq=False)
class Survey:
    """A validated, resolved survey. `hash` is the sha256 of the canonical resolved form."""

    id: str
    title: str
    enrollment: str
    questions: Mapping[str, Question]
    closes_at: datetime | None = None
    description: str | None = None
    device: str = "personal"
    design: Design | None = None
    #: The default language (BCP 47) and the translations into others (docs/surveys.md).
    language: str = DEFAULT_LANGUAGE
    translations: Mapping[str, Translation] = field(default_factory=lambda: MappingProxyType({}))
    #: The series this survey is a wave of, and its number (docs/surveys.md#waves).
    series: str | None = None
    wave: int | None = None
    #: The relay its reports go through and the key they are sealed to (docs/anonymity.md).
    route: Route | None = None

    @cached_property
    def epsilon(self) -> float:
        """The most a respondent can spend: every randomized question's epsilon summed
        (sequential composition), as if every question were asked."""
        return math.fsum(q.epsilon for q in self.questions.values() if q.epsilon is not None)

    def epsilon_of(self, asked: Iterable[str], arms: Mapping[str, str] | None = None) -> float:
        """What a report holding the questions `asked` spends: their epsilons summed, but for
        a split ballot's direct arm (`arms`), sent as answered like a plain question."""
        arms = arms or {}
        return math.fsum(
            e
            for qid in asked
            if (e := self.questions[qid].epsilon) is not None and arms.get(qid) != ballot.DIRECT
        )

    @cached_property
    def split(self) -> tuple[str, ...]:
        """The split-ballot questions (with a `direct_share`), in survey order."""
        return tuple(qid for qid, q in self.questions.items() if q.direct_share is not None)

    def draw_arms(
        self, asked: Iterable[str], *, random_bytes: RandomBytes | None = None
    ) -> dict[str, str]:
        """A fresh arm for each split-ballot question in `asked`, in survey order, drawn on this
        device with the exact share from `random_bytes` (the secure source by default)."""
        wanted = set(asked)
        return {
            qid: ballot.draw_arm(share, random_bytes=random_bytes)
            for qid in self.questions
            if qid in wanted
            if (share := self.questions[qid].direct_share) is not None
        }

    # -- languages -----------------------------------------------------------------------------
    @property
    def languages(self) -> tuple[str, ...]:
        """The survey's languages: the default first, then its translations' in tag order."""
        return (self.language, *self.translations)

    def language_for(self, tag: str | None) -> str | None:
        """The survey's language serving `tag` (the same tag, else the same primary
        language), or None when the survey has none such."""
        return best_language(self.languages, tag)

    def text_in(self, tag: str | None = None) -> SurveyText:
        """Title, description and each question's text, option labels, hint and note in the
        language `tag` (the default language when the survey lacks it)."""
        chosen = self.language_for(tag) or self.language
        default = {
            q.id: QuestionText(q.text, tuple(q.options) if q.kind.labelled else (), q.hint, q.note)
            for q in self.questions.values()
        }
        translation = self.translations.get(chosen)
        if translation is None:
            return SurveyText(
                self.language, self.title, self.description, MappingProxyType(default)
            )
        return SurveyText(chosen, translation.title, translation.description, translation.questions)

    # -- skip logic ----------------------------------------------------------------------------
    @cached_property
    def conditional(self) -> bool:
        """Whether any question has a condition (else every question is always asked)."""
        return any(q.condition is not None for q in self.questions.values())

    @cached_property
    def gates(self) -> tuple[str, ...]:
        """The plain questions some condition reads, in survey order."""
        named = {
            qid for q in self.questions.values() if q.condition for qid in q.condition.questions
        }
        return tuple(qid for qid in self.questions if qid in named)

    def _walk(self, value_of: Callable[[Question], object]) -> tuple[list[str], dict[str, Any]]:
        """The questions asked, in order, and the gates' values, where `value_of` gives a
        gate's value as conditions see it (or _UNANSWERED)."""
        asked: list[str] = []
        values: dict[str, Any] = {}
        gates = set(self.gates)
        for qid, question in self.questions.items():
            if question.condition is not None and not question.condition.evaluate(values):
                continue
            asked.append(qid)
            if qid in gates:
                value = value_of(question)
                if value is not _UNANSWERED:
                    values[qid] = value
        return asked, values

    def relevant(self, plain_values: Mapping[str, object]) -> list[str]:
        """The questions a respondent is asked, in order, given their plain answers (question
        id -> the answer, in the question's normal form or any form `normalize` takes; other
        questions' answers are ignored). SurveyError if a plain answer a condition reads is
        not an answer. The one rule the clients, ingestion and the results use."""
        if not self.conditional:
            return list(self.questions)

        def value_of(question: Question) -> object:
            given = plain_values.get(question.id)
            if given is None:
                return _UNANSWERED
            return question.kind.condition_value(question, question.normalize(given))

        return self._walk(value_of)[0]

    def condition_values(self, answers: Mapping[str, object]) -> dict[str, Any]:
        """The gates' values as conditions see them, decoded from a report's plain wire
        answers (only for questions asked)."""
        return self._walk(lambda q: self._wire_value(q, answers))[1]

    def _wire_value(self, question: Question, answers: Mapping[str, object]) -> object:
        if question.id not in answers:
            return _UNANSWERED
        support = question.support_of(answers[question.id])
        return question.kind.condition_value_of_support(question, support)

    @cached_property
    def _relevant_memo(self) -> dict[tuple[object, ...], tuple[str, ...]]:
        return {}

    def relevant_from_answers(self, answers: Mapping[str, object]) -> list[str]:
        """The questions a report must hold, given its plain wire answers (binary 0/1, a
        categorical's index, an integer's value, a multi's bit string); SurveyError if a
        gate's answer is not valid. Remembered per distinct gate answers (at most
        SUPPORT_MEMO of them): ingestion asks once per report."""
        if not self.conditional:
            return list(self.questions)
        # An absent gate and a gate sent as null differ (null is refused): a sentinel keeps
        # them apart in the memo.
        key = tuple(answers.get(g, _ABSENT) for g in self.gates)
        memo = self._relevant_memo
        hashable = all(type(v) is int or type(v) is str or v is _ABSENT for v in key)
        found = memo.get(key) if hashable else None
        if found is None:
            found = tuple(self._walk(lambda q: self._wire_value(q, answers))[0])
            if hashable and len(memo) < SUPPORT_MEMO:
                memo[key] = found
        return list(found)

    def why_skipped(self, qid: str, values: Mapping[str, Any]) -> str:
        """Why question `qid` is not asked, given the gates' values (condition_values)."""
        condition = self.questions[qid].condition
        assert condition is not None
        return conditions.why_skipped(condition, values)

    @cached_property
    def hash(self) -> str:
        """sha256 hex of the canonical JSON of the resolved form (a survey never changes)."""
        return sha256_hex(canonical_json(self.to_dict()))

    def is_closed(self, now: datetime | None = None) -> bool:
        """Whether `closes_at` has passed (a survey closed by hand is the aggregator's business)."""
        if self.closes_at is None:
            return False
        return (now or datetime.now(UTC)) >= self.closes_at

    def to_dict(self) -> dict[str, Any]:
        """The resolved form: every mechanism and its exact parameters spelled out."""
        doc: dict[str, Any] = {"id": self.id, "title": self.title}
        if self.description is not None:
            doc["description"] = self.description
        doc["enrollment"] = self.enrollment
        if self.device != "personal":  # absent when personal: older surveys keep their hash
            doc["device"] = self.device
        if self.closes_at is not None:
            doc["closes_at"] = format_timestamp(self.closes_at)
        doc["epsilon"] = self.epsilon
        doc["questions"] = [q.to_dict() for q in self.questions.values()]
        if self.design is not None:  # absent without a design: older surveys keep their hash
            doc["design"] = self.design.to_dict()
        # Absent in a survey in English with no translations: older surveys keep their hash.
        if self.language != DEFAULT_LANGUAGE or self.translations:
            doc["language"] = self.language
        if self.translations:
            doc["translations"] = {
                tag: translation.to_dict() for tag, translation in self.translations.items()
            }
        if self.series is not None:  # absent outside a series: older surveys keep their hash
            doc[waves.SERIES_FIELD] = self.series
            doc[waves.WAVE_FIELD] = self.wave
        if self.route is not None:  # absent without a relay: older surveys keep their hash
            doc.update(self.route.to_dict())
        return doc

    @classmethod
    def from_stored(cls, doc: object) -> Survey:
        """A survey the aggregator accepted and stored: parsed as `from_dict`, its texts checked
        as when it was created (stricter text checks added since never lose it)."""
        with stored_survey_texts():
            return cls.from_dict(doc)

    @classmethod
    def from_dict(cls, doc: object) -> Survey:
        """Validate and resolve a survey document; SurveyError says what is wrong and where."""
        if not isinstance(doc, dict):
            raise SurveyError(f"a survey is a JSON object, got {type(doc).__name__}")
        unknown = sorted(set(doc) - _SURVEY_FIELDS)
        if unknown:
            raise _fail(unknown[0], f"unknown field; allowed: {', '.join(sorted(_SURVEY_FIELDS))}")
        sid = doc.get("id")
        if not isinstance(sid, str) or not SURVEY_ID.fullmatch(sid):
            raise _fail(
                "id",
                f"expected 1-64 of a-z, 0-9 and '-', starting with a letter or digit, got {sid!r}",
            )
        title = _text(doc, "title", "")
        description = _text(doc, "description", "", required=False)
        enrollment = doc.get("enrollment", "open")
        if enrollment not in ("open", "invite"):
            raise _fail("enrollment", f"expected 'open' or 'invite', got {enrollment!r}")
        device = doc.get("device", "personal")
        if not isinstance(device, str) or device not in DEVICES:
            raise _fail(
                "device",
                f"expected 'personal' (the default: each respondent's own device) or 'shared' "
                f"(one device passed between respondents), got {device!r:.60}",
            )
        closes_at = doc.get("closes_at")
        closes = None if closes_at is None else parse_timestamp(closes_at, field="closes_at")
        raw_questions = doc.get("questions")
        if not isinstance(raw_questions, list) or not 1 <= len(raw_questions) <= MAX_QUESTIONS:
            raise _fail(
                "questions",
                f"expected a list of 1 to {MAX_QUESTIONS} questions, got "
                + (
                    f"{len(raw_questions):,} questions"
                    if isinstance(raw_questions, list)
                    else f"{raw_questions!r:.60}"  # cut before it is built whole: any size
                ),
            )
        language = canonical_tag(doc.get("language", DEFAULT_LANGUAGE), "language")
        questions: dict[str, Question] = {}
        for i, raw in enumerate(raw_questions):
            question = Question.from_dict(raw, where=f"questions[{i}].")
            if question.id in questions:
                raise _fail(f"questions[{i}].id", f"{question.id!r} is used twice")
            questions[question.id] = question
        questions = _with_conditions(questions)
        if all(q.plain for q in questions.values()):
            raise _fail(
                "questions",
                "every question is plain (mechanism none); a survey needs at least one "
                "randomized question",
            )
        raw_design = doc.get("design")
        design = None if raw_design is None else Design.from_dict(raw_design, questions)
        raw_translations = doc.get("translations")
        translations = (
            MappingProxyType({})
            if raw_translations is None
            else parse_translations(
                raw_translations,
                language=language,
                description=description,
                questions=list(questions.values()),
                max_text=MAX_TEXT,
            )
        )
        survey = cls(
            sid,
            title or "",
            enrollment,
            MappingProxyType(questions),
            closes,
            description,
            device,
            design,
            language,
            translations,
            *waves.parse_series(doc),
            route=parse_route(doc, enrollment),
        )
        waves.check_survey(survey)
        total = doc.get("epsilon")
        if total is not None and (
            isinstance(total, bool)
            or not isinstance(total, int | float)
            or not math.isclose(total, survey.epsilon, rel_tol=0, abs_tol=EPSILON_TOLERANCE)
        ):
            raise _fail(
                "epsilon",
                f"{total!r} is not the sum of the questions' epsilons ({survey.epsilon:.6g}); "
                "leave it out and it is computed",
            )
        return survey


def _with_conditions(questions: dict[str, Question]) -> dict[str, Question]:
    """The questions with their conditions parsed and checked against the survey: only plain
    questions asked earlier, their options, values of the same kind (SurveyError naming the
    question's `relevant`)."""
    ordered = list(questions.values())
    out: dict[str, Question] = {}
    for i, question in enumerate(ordered):
        if question.relevant is None:
            out[question.id] = question
            continue
        try:
            condition = conditions.parse(question.relevant)
            conditions.check(condition, ordered, i)
        except conditions.ConditionError as exc:
            raise conditions.ConditionError(
                exc.category, f"questions[{i}].relevant: {exc}"
            ) from None
        out[question.id] = replace(question, condition=condition)
    return out
