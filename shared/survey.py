"""Survey documents: validation, resolution of mechanisms, the resolved form and its hash.

`Survey.from_dict` accepts what a researcher writes (a question may give just an epsilon) and
the resolved form (`to_dict()`, every mechanism's exact parameters spelled out); resolving a
resolved form changes nothing, so the client and the aggregator compute the same hash.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from types import MappingProxyType
from typing import Any

from deniable.shared import mechanisms as mech
from deniable.shared.canonical import canonical_json, is_unicode, sha256_hex
from deniable.shared.errors import SurveyError
from deniable.shared.mechanisms import Encoded, Mechanism
from deniable.shared.probability import format_probability, parse_probability
from deniable.shared.sketches import CMS, HCMS, RAPPOR, Sketch, SketchAnswer
from deniable.shared.text import MAX_TEXT_ANSWER, normalize_text

SURVEY_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
QUESTION_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
#: Distinct noisy answers a question remembers the supported options of (Question.support_of).
SUPPORT_MEMO = 4096
BINARY_OPTIONS = ("no", "yes")
MAX_QUESTIONS = 100
MAX_OPTIONS = 256
MAX_TEXT = 2000
#: How far a given epsilon may differ from the one its explicit parameters give.
EPSILON_TOLERANCE = 1e-4

_SURVEY_FIELDS = {"id", "title", "description", "enrollment", "closes_at", "questions", "epsilon"}
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
}
QUESTION_TYPES = ("binary", "categorical", "integer", "multi", "text")
#: The mechanisms each question type allows, the default first (docs/surveys.md).
TYPE_MECHANISMS = {
    "binary": (*mech.BINARY_MECHANISMS, mech.PLAIN),
    "categorical": (*mech.CATEGORICAL_MECHANISMS, mech.PLAIN),
    "integer": (*mech.INTEGER_MECHANISMS, mech.PLAIN),
    "multi": (*mech.MULTI_MECHANISMS, mech.PLAIN),
    "text": ("hcms", "cms", "rappor"),
}
#: A text question's mechanisms and their defaults, sized for thousands to millions of
#: reports (joint decoding accounts for the candidates' collisions at any size).
SKETCH_DEFAULTS: dict[str, dict[str, Any]] = {
    "hcms": {"k": 16, "m": 1024},
    "cms": {"k": 16, "m": 256},
    "rappor": {"k": 32, "h": 2, "m": 16, "f": "1/2", "p": "1/2", "q": "3/4"},
}
#: Candidate strings a text question may list (each is estimated in every results request).
MAX_CANDIDATES = 1000
#: Bounds of an integer question's min and max (exact in JavaScript's numbers too).
MAX_MAGNITUDE = 1_000_000_000
#: A plain integer is tallied per value, so its range is kept to this many values; wider
#: numbers are randomized (onebit) or asked in bands (categorical).
MAX_PLAIN_VALUES = 1001


def _fail(where: str, message: str) -> SurveyError:
    return SurveyError(f"{where}: {message}" if where else message)


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


#: NUL, escape and the other C0 controls but tab, newline and carriage return (which surveys
#: stored before this check may hold), and DEL: they would reach terminals and CSV files raw.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _has_control(text: str) -> bool:
    """Whether text holds a control character no survey text needs."""
    return _CONTROL.search(text) is not None


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


def _refuse_stray_parameters(doc: Mapping[str, Any], requested: str, where: str) -> None:
    """Another mechanism's parameters beside the chosen one are a mistake worth naming."""
    stray = sorted((set(mech.PARAMETERS) | set(SKETCH_DEFAULTS)) & set(doc) - {requested})
    if stray:
        raise _fail(
            f"{where}{stray[0]}",
            f"parameters of {stray[0]!r} given, but the mechanism is {requested!r}",
        )


def _check_stated(
    doc: Mapping[str, Any], epsilon: object, randomizer: Mechanism | Sketch, where: str
) -> None:
    """An epsilon, p_star or q_star the document states must be the resolved mechanism's."""
    if epsilon is not None:
        if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
            raise _fail(f"{where}epsilon", f"expected a number, got {epsilon!r}")
        exact_epsilon = float(randomizer.epsilon)  # type: ignore[arg-type]
        if not math.isclose(epsilon, exact_epsilon, rel_tol=0, abs_tol=EPSILON_TOLERANCE):
            raise _fail(
                f"{where}epsilon",
                f"{epsilon!r} does not match the mechanism's parameters, which give "
                f"{exact_epsilon:.6g}; give one or the other",
            )
    for key, exact in (("p_star", randomizer.p_star), ("q_star", randomizer.q_star)):
        if key in doc:
            try:
                given = parse_probability(doc[key], field=f"{where}{key}")
            except ValueError as exc:
                raise SurveyError(str(exc)) from None
            if given != exact:
                raise _fail(
                    f"{where}{key}",
                    f"{doc[key]!r} does not match the mechanism's {format_probability(exact)}",
                )


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
        return list(self._options) if self.type == "text" else []

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
        """The question's privacy loss; None for a plain (`none`) question, sent as answered."""
        return self.randomizer.epsilon

    @property
    def plain(self) -> bool:
        """Whether the answer is sent exactly as given (mechanism `none`), not randomized."""
        return self.randomizer.name == mech.PLAIN

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
        if self.type == "binary" and isinstance(value, bool):
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
        if self.type == "text":
            return self.text_of(value)
        if self.type == "integer":
            return self.offset_of(value)
        if self.type == "multi":
            return self.selection_of(value)
        return self.index_of(value)

    def normalize(self, value: object) -> int | frozenset[int] | str:
        """A true answer in the form `truth_of` reads back unchanged: an option index, an
        integer's value, or the set of selected indices. SurveyError says what is allowed."""
        truth = self.truth_of(value)
        if self.type == "integer":
            assert self.low is not None
            return self.low + int(truth)  # type: ignore[arg-type]
        return truth

    @property
    def answer_hint(self) -> str:
        """What a true answer to this question looks like, in words."""
        if self.type == "integer":
            return f"a whole number from {self.low} to {self.high}"
        if self.type == "text":
            return f"a word or a phrase (up to {MAX_TEXT_ANSWER} characters)"
        allowed = ", ".join(repr(o) for o in self._options)
        if self.type == "multi":
            return f"the options that apply, from {allowed} (none is an answer too)"
        return f"one of {allowed}"

    def randomize(self, value: object) -> Encoded | SketchAnswer:
        """The encoded noisy answer for the true answer `value`, drawn on this device."""
        return self.randomizer.randomize(self.truth_of(value))  # type: ignore[arg-type]

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
        doc: dict[str, Any] = {"id": self.id, "text": self.text, "type": self.type}
        if self.type == "integer":
            doc["min"], doc["max"] = self.low, self.high
        elif self.type != "text":
            doc["options"] = list(self._options)
        doc["mechanism"] = self.mechanism
        if not self.plain:
            doc[self.mechanism] = self.randomizer.params_text()
        if self.type == "text":
            doc["candidates"] = list(self._options)
        doc["epsilon"] = self.epsilon
        doc["p_star"] = format_probability(self.randomizer.p_star)
        doc["q_star"] = format_probability(self.randomizer.q_star)
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
        qtype = doc.get("type")
        if qtype not in QUESTION_TYPES:
            shown = ", ".join(repr(t) for t in QUESTION_TYPES)
            raise _fail(f"{where}type", f"expected one of {shown}, got {qtype!r}")
        low, high = cls._range_of(doc, qtype, where)
        if qtype == "text":
            return cls._text_question(doc, qid, text or "", where)
        if "candidates" in doc:
            raise _fail(f"{where}candidates", "only a text question has candidates")
        options = () if qtype == "integer" else cls._options_of(doc, qtype, where)
        requested = doc.get("mechanism")
        names = TYPE_MECHANISMS[qtype]
        if requested is None:
            requested = names[0]
        elif requested not in names:
            raise _fail(
                f"{where}mechanism",
                f"{requested!r} does not fit a {qtype} question; allowed: {', '.join(names)}",
            )
        _refuse_stray_parameters(doc, requested, where)
        epsilon = doc.get("epsilon")
        try:
            if requested == mech.PLAIN:
                randomizer = cls._plain(doc, len(options), qtype, where, low, high)
                epsilon = None
            elif qtype in ("integer", "multi"):
                randomizer = cls._numeric_or_multi(doc, qtype, len(options), low, high, where)
            elif requested in mech.PARAMETERS and requested in doc:
                randomizer = mech.from_params(
                    requested, len(options), doc[requested], field=f"{where}{requested}"
                )
            elif requested == "coins":
                raise _fail(
                    f"{where}coins",
                    'the coins mechanism needs its coins, e.g. {"truth": 0.5, "yes": 0.5}',
                )
            elif epsilon is None:
                raise _fail(
                    f"{where}epsilon",
                    f"missing; give an epsilon in [{mech.MIN_EPSILON}, {mech.MAX_EPSILON}] "
                    "or the mechanism's parameters",
                )
            else:
                randomizer = mech.from_epsilon(requested, len(options), epsilon=epsilon)
        except ValueError as exc:
            if isinstance(exc, SurveyError):
                raise
            message = str(exc)
            if message.startswith("epsilon:"):
                raise _fail(f"{where}epsilon", message.removeprefix("epsilon:").strip()) from None
            raise SurveyError(message) from None
        _check_stated(doc, epsilon, randomizer, where)
        return cls(qid, text or "", qtype, options, randomizer, requested, low, high)

    @classmethod
    def _text_question(cls, doc: Mapping[str, Any], qid: str, text: str, where: str) -> Question:
        """A text question: its sketch (hcms by default) and its normalized candidates."""
        if "options" in doc:
            raise _fail(f"{where}options", "a text question has candidates, not options")
        names = TYPE_MECHANISMS["text"]
        requested = doc.get("mechanism", names[0])
        if requested not in names:
            raise _fail(
                f"{where}mechanism",
                f"{requested!r} does not fit a text question; allowed: {', '.join(names)}",
            )
        _refuse_stray_parameters(doc, requested, where)
        field_name = f"{where}{requested}"
        raw = doc.get(requested, {})
        if not isinstance(raw, dict):
            raise _fail(field_name, f"expected an object of parameters, got {raw!r}")
        epsilon = doc.get("epsilon")
        if epsilon is not None and (
            isinstance(epsilon, bool) or not isinstance(epsilon, int | float)
        ):
            raise _fail(f"{where}epsilon", f"expected a number, got {epsilon!r}")
        try:
            sketch = cls._sketch(requested, raw, epsilon, field_name)
        except SurveyError:
            raise
        except ValueError as exc:
            message = str(exc)
            if message.startswith("epsilon:"):
                raise _fail(f"{where}epsilon", message.removeprefix("epsilon:").strip()) from None
            if message.startswith(field_name):  # already names its field
                raise SurveyError(message) from None
            raise _fail(field_name, message.removeprefix(f"{requested}:").strip()) from None
        _check_stated(doc, epsilon, sketch, where)
        candidates = cls._candidates_of(doc.get("candidates", []), f"{where}candidates")
        return cls(qid, text, "text", candidates, sketch, requested)

    @staticmethod
    def _sketch(name: str, raw: Mapping[str, Any], epsilon: object, field: str) -> Sketch:
        """The sketch from its parameters (defaults where left out): `keep` or the epsilon
        for cms and hcms; f, p and q (which fix the epsilon) for rappor."""
        allowed = {"hcms": {"k", "m", "keep"}, "cms": {"k", "m", "keep"}}.get(
            name, {"k", "h", "m", "f", "p", "q"}
        )
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise _fail(f"{field}.{unknown[0]}", f"unknown; allowed: {', '.join(sorted(allowed))}")
        params = {**SKETCH_DEFAULTS[name], **raw}
        if name == "rappor":
            return RAPPOR.from_params(params, field=field)
        k, m = params["k"], params["m"]
        for key, value in (("k", k), ("m", m)):
            if type(value) is not int:
                raise _fail(f"{field}.{key}", f"expected a whole number, got {value!r}")
        kind = HCMS if name == "hcms" else CMS
        if "keep" in raw:
            keep = parse_probability(raw["keep"], field=f"{field}.keep")
            return kind(k=k, m=m, keep=keep)
        if epsilon is None:
            raise _fail(
                field.rsplit(".", 1)[0] + ".epsilon" if "." in field else "epsilon",
                f"missing; give an epsilon in [{mech.MIN_EPSILON}, {mech.MAX_EPSILON}] or "
                f'{name}: {{"keep": ...}}',
            )
        return kind.from_epsilon(k=k, m=m, epsilon=epsilon)  # type: ignore[arg-type]

    @staticmethod
    def _candidates_of(raw: object, field: str) -> tuple[str, ...]:
        """Normalized, distinct candidate strings."""
        if not isinstance(raw, list) or len(raw) > MAX_CANDIDATES:
            raise _fail(field, f"expected a list of at most {MAX_CANDIDATES} strings, got {raw!r}")
        out: list[str] = []
        for i, item in enumerate(raw):
            text = normalize_text(item) if isinstance(item, str) and is_unicode(item) else ""
            if not text or len(text) > MAX_TEXT_ANSWER or _has_control(text):
                raise _fail(
                    f"{field}[{i}]",
                    f"expected a word or phrase of 1 to {MAX_TEXT_ANSWER} characters, got {item!r}",
                )
            if text in out:
                raise _fail(f"{field}[{i}]", f"{item!r} is {text!r} again once normalized")
            out.append(text)
        return tuple(out)

    @staticmethod
    def _numeric_or_multi(
        doc: Mapping[str, Any], qtype: str, k: int, low: int | None, high: int | None, where: str
    ) -> Mechanism:
        """The randomized mechanism of an integer (onebit) or multi (rr) question, from its
        explicit `keep` or from an epsilon (for multi, the whole question's)."""
        name = "onebit" if qtype == "integer" else "rr"
        if name in doc:
            raw = doc[name]
            if not isinstance(raw, dict) or set(raw) != {"keep"}:
                raise _fail(f"{where}{name}", f'expected {{"keep": <probability>}}, got {raw!r}')
            keep = parse_probability(raw["keep"], field=f"{where}{name}.keep")
            if not mech.HALF < keep < 1:
                raise _fail(
                    f"{where}{name}.keep",
                    f"must lie strictly between 1/2 and 1 (p*, the chance the report leans "
                    f"the true way), got {raw['keep']!r}",
                )
            if qtype == "integer":
                assert low is not None and high is not None
                return mech.OneBit(low=low, high=high, keep=keep)
            return mech.MultiRR(k, keep=keep)
        epsilon = doc.get("epsilon")
        if epsilon is None:
            raise _fail(
                f"{where}epsilon",
                f"missing; give an epsilon in [{mech.MIN_EPSILON}, {mech.MAX_EPSILON}] "
                f'or the mechanism\'s parameters ({name}: {{"keep": ...}})',
            )
        if qtype == "integer":
            assert low is not None and high is not None
            return mech.OneBit.from_epsilon(low=low, high=high, epsilon=epsilon)
        return mech.MultiRR.from_epsilon(k, epsilon=epsilon)

    @staticmethod
    def _range_of(doc: Mapping[str, Any], qtype: str, where: str) -> tuple[int | None, int | None]:
        """An integer question's (min, max); (None, None) for the other types, which have none."""
        if qtype != "integer":
            for key in ("min", "max"):
                if key in doc:
                    raise _fail(f"{where}{key}", f"only an integer question has {key}")
            return None, None
        if "options" in doc:
            raise _fail(f"{where}options", "an integer question has min and max, not options")
        bounds = []
        for key in ("min", "max"):
            value = doc.get(key)
            if type(value) is not int or abs(value) > MAX_MAGNITUDE:
                raise _fail(
                    f"{where}{key}",
                    f"expected a whole number from {-MAX_MAGNITUDE} to {MAX_MAGNITUDE}, "
                    f"got {value!r}",
                )
            bounds.append(value)
        low, high = bounds
        if low >= high:
            raise _fail(f"{where}max", f"must be greater than min ({low}), got {high}")
        return low, high

    @staticmethod
    def _plain(
        doc: Mapping[str, Any],
        k: int,
        qtype: str,
        where: str,
        low: int | None = None,
        high: int | None = None,
    ) -> Mechanism:
        """A plain question's mechanism: no epsilon and no parameters can be given."""
        if doc.get("epsilon") is not None:
            raise _fail(
                f"{where}epsilon",
                "a plain question (mechanism none) is sent exactly as answered and has no "
                "epsilon; leave it out, or choose a randomized mechanism",
            )
        if doc.get(mech.PLAIN) not in (None, {}):
            raise _fail(f"{where}{mech.PLAIN}", "a plain question has no parameters")
        if qtype == "integer":
            assert low is not None and high is not None
            if high - low + 1 > MAX_PLAIN_VALUES:
                raise _fail(
                    f"{where}max",
                    f"a plain integer is counted per value, at most {MAX_PLAIN_VALUES} values "
                    f"(got {high - low + 1}); narrow min..max, ask in bands (categorical), or "
                    "randomize it (onebit)",
                )
            return mech.PlainInteger(low=low, high=high)
        if qtype == "multi":
            return mech.PlainSelection(k)
        return mech.Plain(k, binary=qtype == "binary")

    @staticmethod
    def _options_of(doc: Mapping[str, Any], qtype: str, where: str) -> tuple[str, ...]:
        raw = doc.get("options")
        if qtype == "binary":
            if raw is not None and raw != list(BINARY_OPTIONS):
                raise _fail(
                    f"{where}options",
                    f"a binary question's options are always ['no', 'yes'], got {raw!r}",
                )
            return BINARY_OPTIONS
        if not isinstance(raw, list) or not 2 <= len(raw) <= MAX_OPTIONS:
            raise _fail(
                f"{where}options",
                f"expected a list of 2 to {MAX_OPTIONS} option labels, got {raw!r}",
            )
        for i, label in enumerate(raw):
            if (
                not isinstance(label, str)
                or not label.strip()
                or len(label) > 200
                or not is_unicode(label)
                or _has_control(label)
            ):
                raise _fail(
                    f"{where}options[{i}]",
                    f"expected a non-empty label of at most 200 characters, got {label!r}",
                )
        if len({label.casefold() for label in raw}) != len(raw):
            raise _fail(f"{where}options", f"labels must be distinct, got {raw!r}")
        return tuple(raw)


@dataclass(frozen=True, eq=False)
class Survey:
    """A validated, resolved survey. `hash` is the sha256 of the canonical resolved form."""

    id: str
    title: str
    enrollment: str
    questions: Mapping[str, Question]
    closes_at: datetime | None = None
    description: str | None = None

    @cached_property
    def epsilon(self) -> float:
        """Total privacy loss of answering every question (sequential composition)."""
        return math.fsum(q.epsilon for q in self.questions.values() if q.epsilon is not None)

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
        if self.closes_at is not None:
            doc["closes_at"] = format_timestamp(self.closes_at)
        doc["epsilon"] = self.epsilon
        doc["questions"] = [q.to_dict() for q in self.questions.values()]
        return doc

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
        closes_at = doc.get("closes_at")
        closes = None if closes_at is None else parse_timestamp(closes_at, field="closes_at")
        raw_questions = doc.get("questions")
        if not isinstance(raw_questions, list) or not 1 <= len(raw_questions) <= MAX_QUESTIONS:
            raise _fail(
                "questions",
                f"expected a list of 1 to {MAX_QUESTIONS} questions, got {raw_questions!r}",
            )
        questions: dict[str, Question] = {}
        for i, raw in enumerate(raw_questions):
            question = Question.from_dict(raw, where=f"questions[{i}].")
            if question.id in questions:
                raise _fail(f"questions[{i}].id", f"{question.id!r} is used twice")
            questions[question.id] = question
        if all(q.plain for q in questions.values()):
            raise _fail(
                "questions",
                "every question is plain (mechanism none); a survey needs at least one "
                "randomized question",
            )
        survey = cls(sid, title or "", enrollment, MappingProxyType(questions), closes, description)
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
