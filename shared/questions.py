"""Question types: one class each (binary, categorical, integer, multi, text).

A type owns what differs between questions of different types: how a question of it is
validated and resolved from a survey document, how a respondent's value becomes what its
mechanism randomizes, how it is explained in plain words, the shape of its tallies and result
rows, and what the aggregator may do with it (group by it, use it as a covariate or outcome).
Everything else asks `question.kind`; a new type is one new class here plus its tests
(docs/architecture.md).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from deniable.shared import longitudinal as lg
from deniable.shared import mechanisms as mech
from deniable.shared.canonical import is_unicode
from deniable.shared.errors import SurveyError
from deniable.shared.i18n import Translate, english
from deniable.shared.mechanisms import Mechanism
from deniable.shared.probability import format_probability, parse_probability
from deniable.shared.sketches import CMS, HCMS, RAPPOR, Sketch
from deniable.shared.text import MAX_TEXT_ANSWER, normalize_text

if TYPE_CHECKING:
    from deniable.shared.survey import Question


class Draws(Protocol):
    """A seedable generator (random.Random) the simulator draws true answers with: they stand
    for a population, never for a respondent's coins, which come from `secrets`."""

    def random(self) -> float: ...

    def choices(self, population: Sequence[Any], weights: Any = None) -> list[Any]: ...


BINARY_OPTIONS = ("no", "yes")
MAX_OPTIONS = 256
#: How far a given epsilon may differ from the one its explicit parameters give.
EPSILON_TOLERANCE = 1e-4
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


def fail(where: str, message: str) -> SurveyError:
    """A SurveyError naming the field `where` (a path like "questions[0].epsilon")."""
    return SurveyError(f"{where}: {message}" if where else message)


#: Control characters no survey text may hold: the C0 controls but tab and newline, DEL and
#: the C1 controls. They would reach terminals and CSV files raw, and a carriage return in an
#: option label never comes back: a browser turns it into a newline in a form's value.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: What was refused before carriage returns and C1 controls were: a survey stored then keeps
#: loading (its hash holds its texts as they are), see `stored_survey_texts`.
_STORED_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_READING_STORED = ContextVar("reading_stored_survey", default=False)


def has_control(text: str) -> bool:
    """Whether text holds a control character no survey text may hold."""
    pattern = _STORED_CONTROL if _READING_STORED.get() else _CONTROL
    return pattern.search(text) is not None


@contextmanager
def stored_survey_texts() -> Iterator[None]:
    """Within it, texts are checked as when surveys already stored were created, so that an
    accepted survey (and its reports) is never lost to a stricter check added since."""
    token = _READING_STORED.set(True)
    try:
        yield
    finally:
        _READING_STORED.reset(token)


def refuse_stray_parameters(doc: Mapping[str, Any], requested: str, where: str) -> None:
    """Another mechanism's parameters beside the chosen one are a mistake worth naming."""
    stray = sorted((set(mech.PARAMETERS) | set(SKETCH_DEFAULTS)) & set(doc) - {requested})
    if stray:
        raise fail(
            f"{where}{stray[0]}",
            f"parameters of {stray[0]!r} given, but the mechanism is {requested!r}",
        )


def check_stated(
    doc: Mapping[str, Any], epsilon: object, randomizer: Mechanism | Sketch, where: str
) -> None:
    """An epsilon, p_star or q_star the document states must be the resolved mechanism's."""
    if epsilon is not None:
        if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
            raise fail(f"{where}epsilon", f"expected a number, got {epsilon!r}")
        exact_epsilon = float(randomizer.epsilon)  # type: ignore[arg-type]
        if not math.isclose(epsilon, exact_epsilon, rel_tol=0, abs_tol=EPSILON_TOLERANCE):
            raise fail(
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
                raise fail(
                    f"{where}{key}",
                    f"{doc[key]!r} does not match the mechanism's {format_probability(exact)}",
                )


def _epsilon_error(exc: ValueError, where: str) -> SurveyError:
    """A mechanism's ValueError as a SurveyError naming the question's field."""
    if isinstance(exc, SurveyError):
        return exc
    message = str(exc)
    if message.startswith("epsilon:"):
        return fail(f"{where}epsilon", message.removeprefix("epsilon:").strip())
    return SurveyError(message)


@dataclass(frozen=True)
class Resolved:
    """What a type resolves from a question document, besides its id and text."""

    options: tuple[str, ...]
    randomizer: Mechanism | Sketch
    requested: str
    low: int | None = None
    high: int | None = None


class QuestionType:
    """What every question type answers; the subclasses fill in what differs."""

    #: The wire name (`"type"` in a survey document).
    name: ClassVar[str]
    #: The mechanisms a question of this type allows, the default first (docs/surveys.md).
    mechanisms: ClassVar[tuple[str, ...]]
    #: The shape of its result rows: "yes" (two complementary options), "options" (a
    #: distribution over options), "marks" (a share per option, each its own yes/no),
    #: "mean" (one row, a number's mean) or "candidates" (text: one row per candidate).
    rows: ClassVar[str]
    #: Whether its rows' shares are a distribution over the options (they add up to 1).
    distribution: ClassVar[bool] = False
    #: Whether a plain question of this type can group reports (breakdown's `by`).
    groups: ClassVar[bool] = False
    #: How a plain question of this type enters a regression: "number", "factor" or None.
    covariate: ClassVar[str | None] = None
    #: The result row and what a breakdown's difference test compares (None: no test).
    compared: ClassVar[tuple[int, str] | None] = None
    #: The option a regression's outcome is when none is named (None: one must be named).
    outcome_row: ClassVar[int | None] = None
    #: Why a question of this type cannot be a regression's outcome (None: it can).
    not_an_outcome: ClassVar[str | None] = None
    #: Whether a cross-tab can join its options with another question's.
    crosses: ClassVar[bool] = True
    #: The option an example formula takes as the outcome (a categorical's second).
    example_option: ClassVar[int] = 1

    def privacy_sentence(self, _: Translate = english) -> str:
        """Its privacy-cost sentence, "... {times} times surer" of what an observer can be, as
        one whole sentence in the translator's language, with {epsilon} and {times} left to
        fill (docs/translations.md)."""
        return _(
            "Privacy cost: epsilon = {epsilon}. Whatever is sent, an observer can be at most "
            "{times} times surer of any one answer than of another."
        )

    #: The respondent page's input: "choice" (one radio per option), "number", "boxes" (a
    #: checkbox per option) or "words" (a text box); the same names as mechanisms.js's controls.
    control: ClassVar[str] = "choice"
    #: What a plain question's answer is in a skip-logic condition (deniable.shared.conditions):
    #: "label" (an option's label), "number", "set" (the labels selected) or None (cannot be
    #: tested). conditions.js reads it from mechanisms.js's QUESTION_TYPES (`condition`).
    condition_kind: ClassVar[str | None] = "label"
    #: Whether its options are labels shown to respondents (a translation gives each one);
    #: an XLSForm lists them as its choices.
    labelled: ClassVar[bool] = True
    #: The classes of the mechanisms it allows, the default first; `mechanisms` are their
    #: names. The planners take those that declare a planning (`PLANNED`).
    randomizers: ClassVar[tuple[Any, ...]]
    #: Why a question of this type cannot be a split ballot (None: a randomized one can; its
    #: direct arm is sent as answered, as `sent_as_answered` builds it).
    no_split_ballot: ClassVar[str | None] = None
    #: How a question of this type asked again in waves is randomized (docs/surveys.md#waves):
    #: the one-report mechanism it names (None: none named) -> the protocol, built over k
    #: options at (epsilon_perm, epsilon_1). Empty: it cannot be asked in waves.
    chains: ClassVar[Mapping[str | None, Callable[[int, float, float], Any]]] = {}
    #: Its XLSForm row type: a select's ("select_one", followed by its choice list's name) or
    #: the type written alone ("integer").
    xlsform_type: ClassVar[str] = "select_one"
    #: An XLSForm's choice names when they are fixed, in the order written (its list is named
    #: after them); None: named after the option labels.
    xlsform_choices: ClassVar[tuple[str, ...] | None] = None

    # -- the survey document ---------------------------------------------------------------------
    def resolve(self, doc: Mapping[str, Any], where: str) -> Resolved:
        """Validate and resolve the type's part of a question document (SurveyError)."""
        low, high = self.range_of(doc, where)
        if "candidates" in doc:
            raise fail(f"{where}candidates", "only a text question has candidates")
        options = self.options_of(doc, where)
        requested = self.requested(doc, where)
        epsilon = doc.get("epsilon")
        try:
            if requested == mech.PLAIN:
                randomizer: Mechanism = self.plain(doc, options, low, high, where)
                epsilon = None
            else:
                randomizer = self.randomized(doc, requested, options, low, high, where)
        except ValueError as exc:
            raise _epsilon_error(exc, where) from None
        check_stated(doc, epsilon, randomizer, where)
        return Resolved(options, randomizer, requested, low, high)

    def requested(self, doc: Mapping[str, Any], where: str) -> str:
        """The mechanism the document asks for (the type's default if none), if it fits."""
        names = self.mechanisms
        requested = doc.get("mechanism")
        if requested is None:
            requested = names[0]
        elif requested not in names:
            raise fail(
                f"{where}mechanism",
                f"{requested!r} does not fit a {self.name} question; allowed: {', '.join(names)}",
            )
        refuse_stray_parameters(doc, requested, where)
        return str(requested)

    def range_of(self, doc: Mapping[str, Any], where: str) -> tuple[int | None, int | None]:
        """(min, max): only an integer question has them."""
        for key in ("min", "max"):
            if key in doc:
                raise fail(f"{where}{key}", f"only an integer question has {key}")
        return None, None

    def options_of(self, doc: Mapping[str, Any], where: str) -> tuple[str, ...]:
        """The option labels: a list of 2 to MAX_OPTIONS distinct labels."""
        raw = doc.get("options")
        if not isinstance(raw, list) or not 2 <= len(raw) <= MAX_OPTIONS:
            raise fail(
                f"{where}options",
                f"expected a list of 2 to {MAX_OPTIONS} option labels, got {raw!r}",
            )
        for i, label in enumerate(raw):
            if (
                not isinstance(label, str)
                or not label.strip()
                or len(label) > 200
                or not is_unicode(label)
                or has_control(label)
            ):
                raise fail(
                    f"{where}options[{i}]",
                    f"expected a non-empty label of at most 200 characters, got {label!r}",
                )
        if len({label.casefold() for label in raw}) != len(raw):
            raise fail(f"{where}options", f"labels must be distinct, got {raw!r}")
        return tuple(raw)

    def plain(
        self,
        doc: Mapping[str, Any],
        options: tuple[str, ...],
        low: int | None,
        high: int | None,
        where: str,
    ) -> Mechanism:
        """A plain question's mechanism: no epsilon and no parameters can be given."""
        if doc.get("epsilon") is not None:
            raise fail(
                f"{where}epsilon",
                "a plain question (mechanism none) is sent exactly as answered and has no "
                "epsilon; leave it out, or choose a randomized mechanism",
            )
        if doc.get(mech.PLAIN) not in (None, {}):
            raise fail(f"{where}{mech.PLAIN}", "a plain question has no parameters")
        return self.sent_as_answered(options, low, high, where)

    def sent_as_answered(
        self, options: tuple[str, ...], low: int | None, high: int | None, where: str
    ) -> Mechanism:
        """The plain (`none`) mechanism of this type."""
        return mech.Plain(len(options))

    def randomized(
        self,
        doc: Mapping[str, Any],
        requested: str,
        options: tuple[str, ...],
        low: int | None,
        high: int | None,
        where: str,
    ) -> Mechanism:
        """The randomized mechanism `requested`, from its parameters or an epsilon."""
        epsilon = doc.get("epsilon")
        if requested in mech.PARAMETERS and requested in doc:
            return mech.from_params(
                requested, len(options), doc[requested], field=f"{where}{requested}"
            )
        if requested == mech.Coins.name:
            raise fail(
                f"{where}coins",
                'the coins mechanism needs its coins, e.g. {"truth": 0.5, "yes": 0.5}',
            )
        if epsilon is None:
            raise fail(
                f"{where}epsilon",
                f"missing; give an epsilon in [{mech.MIN_EPSILON}, {mech.MAX_EPSILON}] "
                "or the mechanism's parameters",
            )
        return mech.from_epsilon(requested, len(options), epsilon=epsilon)

    def to_dict(self, question: Question, mechanism: dict[str, Any]) -> dict[str, Any]:
        """The resolved question document around the mechanism's part (mechanism, params)."""
        return {
            "id": question.id,
            "text": question.text,
            "type": self.name,
            "options": question.options,
            **mechanism,
        }

    def candidates(self, question: Question) -> list[str]:
        """A text question's candidate strings; none for the other types."""
        return []

    # -- a respondent's value --------------------------------------------------------------------
    def truth_of(self, question: Question, value: object) -> int | frozenset[int] | str:
        """What the mechanism randomizes for the true answer `value` (SurveyError if none)."""
        return question.index_of(value)

    def normalize(self, question: Question, value: object) -> int | frozenset[int] | str:
        """A true answer in the form `truth_of` reads back unchanged."""
        return self.truth_of(question, value)

    def accepts_bool(self) -> bool:
        """Whether True/False name an option (a binary question's yes/no)."""
        return False

    def answer_hint(self, question: Question) -> str:
        """What a true answer to this question looks like, in words."""
        return f"one of {_allowed(question)}"

    def condition_value(self, question: Question, normal: Any) -> Any:
        """A plain answer in its normal form (`normalize`) as a condition sees it."""
        return question.options[normal]

    def condition_value_of_support(self, question: Question, support: tuple[int, ...]) -> Any:
        """A plain wire answer, by the slots it supports (`support_of`), as a condition sees
        it."""
        return question.options[support[0]]

    # -- at a terminal (`deniable answer`) --------------------------------------------------------
    #: Whether the prompt lists the options, numbered from 1.
    numbered: ClassVar[bool] = True
    #: What the prompt takes when the respondent just presses Enter (None: asks again).
    prompt_default: ClassVar[str | None] = None

    def prompt(self, question: Question) -> str:
        """The prompt for a true answer."""
        return f"     Your answer (1-{question.k})"

    def from_prompt(self, question: Question, text: str) -> Any:
        """A typed answer (a 1-based number or a label) as the option's label; SurveyError
        says what to type instead."""
        return _one_option(question, text)

    def noisy_text(self, question: Question, encoded: Any) -> str:
        """A noisy answer as the respondent should read it ("yes", "C", "0010 (marks C)")."""
        if isinstance(encoded, str):
            marked = [question.options[i] for i in question.supports(encoded)]
            return f"{encoded} (marks {', '.join(marked) if marked else 'none'})"
        return question.options[encoded]

    # -- explanations -----------------------------------------------------------------------------
    def explain_lines(
        self, question: Question, _: Translate = english, labels: Sequence[str] | None = None
    ) -> list[str]:
        """The lines under the question's text in `deniable explain` (options, what to give),
        in the translator's language, with the option `labels` of that language if given."""
        shown = ", ".join(labels or question.options)
        return ["   " + _("Options: {options}").format(options=shown)]

    # -- simulation -------------------------------------------------------------------------------
    def default_truth(self, question: Question) -> Any:
        """A fixed skewed truth: weights k, k-1, ..., 1 over the options."""
        total = question.k * (question.k + 1) / 2
        return [(question.k - i) / total for i in range(question.k)]

    def draw(self, question: Question, given: Any, rng: Draws) -> object:
        """One respondent's true answer drawn from the truth `given` (an option index here)."""
        return rng.choices(range(question.k), weights=given)[0]

    def true_value(self, given: Any, option: int) -> float:
        """The population value a results row estimates: an option's share."""
        return float(given[option])


def _allowed(question: Question) -> str:
    return ", ".join(repr(o) for o in question.options)


def _one_option(question: Question, text: str) -> str:
    """A typed option: its 1-based number or its label."""
    value = text.strip()
    if value.isascii() and value.isdigit() and len(value) <= 4:  # not "²" (isdigit, no int)
        number = int(value)
        if 1 <= number <= question.k:
            return question.options[number - 1]
        raise SurveyError(f"give a number from 1 to {question.k}")
    try:
        return question.options[question.index_of(value)]
    except SurveyError:
        raise SurveyError(
            f"give a number from 1 to {question.k} or one of: {', '.join(question.options)}"
        ) from None


class Binary(QuestionType):
    """A yes/no question: options always ["no", "yes"], rr (default), coins or none."""

    name = "binary"
    randomizers = (mech.RR, mech.Coins, mech.Plain)
    mechanisms = tuple(m.name for m in randomizers)
    chains = dict.fromkeys((None, mech.RR.name, mech.Coins.name), lg.LGRR.for_series)
    xlsform_choices = ("yes", "no")
    rows = "yes"
    distribution = True
    groups = True
    covariate = "number"
    compared = (1, "share of yes")
    outcome_row = 1

    def privacy_sentence(self, _: Translate = english) -> str:
        return _(
            "Privacy cost: epsilon = {epsilon}. Whatever is sent, an observer can be at most "
            "{times} times surer you answered yes than no (or no than yes)."
        )

    def options_of(self, doc: Mapping[str, Any], where: str) -> tuple[str, ...]:
        raw = doc.get("options")
        if raw is not None and raw != list(BINARY_OPTIONS):
            raise fail(
                f"{where}options",
                f"a binary question's options are always ['no', 'yes'], got {raw!r}",
            )
        return BINARY_OPTIONS

    def sent_as_answered(
        self, options: tuple[str, ...], low: int | None, high: int | None, where: str
    ) -> Mechanism:
        return mech.Plain(len(options), binary=True)

    def accepts_bool(self) -> bool:
        return True

    def from_prompt(self, question: Question, text: str) -> Any:
        value = text.strip()
        if not (value.isascii() and value.isdigit()) and value.casefold() in ("y", "n"):
            return "yes" if value.casefold() == "y" else "no"
        return _one_option(question, text)

    def explain_lines(
        self, question: Question, _: Translate = english, labels: Sequence[str] | None = None
    ) -> list[str]:
        return []

    def default_truth(self, question: Question) -> Any:
        return [0.7, 0.3]


class Categorical(QuestionType):
    """One option of several: grr, oue, auto (the default: whichever is more accurate) or none."""

    name = "categorical"
    randomizers = (mech.GRR, mech.OUE, mech.Auto, mech.Plain)
    mechanisms = tuple(m.name for m in randomizers)
    chains = {
        None: lg.LGRR,
        mech.GRR.name: lg.LGRR,
        mech.OUE.name: lg.LOSUE,
        mech.Auto.name: lg.auto,
    }
    rows = "options"
    distribution = True
    groups = True
    covariate = "factor"


class Integer(QuestionType):
    """A whole number from min to max: onebit (its mean) or none (counted per value)."""

    name = "integer"
    control = "number"
    randomizers = (mech.OneBit, mech.PlainInteger)
    mechanisms = tuple(m.name for m in randomizers)
    xlsform_type = "integer"
    rows = "mean"
    covariate = "number"
    compared = (0, "mean")
    crosses = False
    not_an_outcome = (
        "is a number (onebit); the outcome must be a yes/no: a binary question, or one option "
        "of a categorical or multi question (compare its mean across groups with breakdown)"
    )
    condition_kind = "number"
    labelled = False

    def privacy_sentence(self, _: Translate = english) -> str:
        return _(
            "Privacy cost: epsilon = {epsilon}. Whatever is sent, an observer can be at most "
            "{times} times surer of any one number than of another."
        )

    def condition_value(self, question: Question, normal: Any) -> Any:
        return int(normal)

    def condition_value_of_support(self, question: Question, support: tuple[int, ...]) -> Any:
        assert question.low is not None
        return question.low + support[0]

    def range_of(self, doc: Mapping[str, Any], where: str) -> tuple[int | None, int | None]:
        if "options" in doc:
            raise fail(f"{where}options", "an integer question has min and max, not options")
        bounds = []
        for key in ("min", "max"):
            value = doc.get(key)
            if type(value) is not int or abs(value) > MAX_MAGNITUDE:
                raise fail(
                    f"{where}{key}",
                    f"expected a whole number from {-MAX_MAGNITUDE} to {MAX_MAGNITUDE}, "
                    f"got {value!r}",
                )
            bounds.append(value)
        low, high = bounds
        if low >= high:
            raise fail(f"{where}max", f"must be greater than min ({low}), got {high}")
        return low, high

    def options_of(self, doc: Mapping[str, Any], where: str) -> tuple[str, ...]:
        return ()

    def sent_as_answered(
        self, options: tuple[str, ...], low: int | None, high: int | None, where: str
    ) -> Mechanism:
        assert low is not None and high is not None
        if high - low + 1 > MAX_PLAIN_VALUES:
            raise fail(
                f"{where}max",
                f"a plain integer is counted per value, at most {MAX_PLAIN_VALUES} values "
                f"(got {high - low + 1}); narrow min..max, ask in bands (categorical), or "
                "randomize it (onebit)",
            )
        return mech.PlainInteger(low=low, high=high)

    def randomized(
        self,
        doc: Mapping[str, Any],
        requested: str,
        options: tuple[str, ...],
        low: int | None,
        high: int | None,
        where: str,
    ) -> Mechanism:
        assert low is not None and high is not None
        keep = _keep(doc, requested, where)
        if keep is not None:
            return mech.OneBit(low=low, high=high, keep=keep)
        return mech.OneBit.from_epsilon(low=low, high=high, epsilon=_epsilon(doc, requested, where))

    def to_dict(self, question: Question, mechanism: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": question.id,
            "text": question.text,
            "type": self.name,
            "min": question.low,
            "max": question.high,
            **mechanism,
        }

    def truth_of(self, question: Question, value: object) -> int | frozenset[int] | str:
        return question.offset_of(value)

    def normalize(self, question: Question, value: object) -> int | frozenset[int] | str:
        assert question.low is not None
        return question.low + int(question.offset_of(value))

    def answer_hint(self, question: Question) -> str:
        return f"a whole number from {question.low} to {question.high}"

    numbered = False

    def prompt(self, question: Question) -> str:
        return f"     Your answer (a whole number from {question.low} to {question.high})"

    def from_prompt(self, question: Question, text: str) -> Any:
        try:
            return question.normalize(text.strip())
        except SurveyError:
            raise SurveyError(
                f"give a whole number from {question.low} to {question.high}"
            ) from None

    def noisy_text(self, question: Question, encoded: Any) -> str:
        return f"{encoded} (one bit)" if not question.plain else str(encoded)

    def explain_lines(
        self, question: Question, _: Translate = english, labels: Sequence[str] | None = None
    ) -> list[str]:
        line = _("A whole number from {low} to {high}.")
        return ["   " + line.format(low=question.low, high=question.high)]

    def default_truth(self, question: Question) -> Any:
        """Weights 5, 4, ..., 1 over five points from min to max."""
        assert question.low is not None and question.high is not None
        low, high = question.low, question.high
        points = sorted({low + (high - low) * i // 4 for i in range(5)})
        total = len(points) * (len(points) + 1) / 2
        return {v: (len(points) - i) / total for i, v in enumerate(points)}

    def draw(self, question: Question, given: Any, rng: Draws) -> object:
        return rng.choices(list(given), weights=list(given.values()))[0]

    def true_value(self, given: Any, option: int) -> float:
        return math.fsum(v * w for v, w in given.items())


class Multi(QuestionType):
    """Select all that apply: each option's mark randomized (rr at epsilon / k) or none."""

    name = "multi"
    control = "boxes"
    randomizers = (mech.MultiRR, mech.PlainSelection)
    mechanisms = tuple(m.name for m in randomizers)
    xlsform_type = "select_multiple"
    rows = "marks"
    example_option = -1
    condition_kind = "set"

    def privacy_sentence(self, _: Translate = english) -> str:
        return _(
            "Privacy cost: epsilon = {epsilon}. Whatever is sent, an observer can be at most "
            "{times} times surer of any one set of choices than of another."
        )

    def condition_value(self, question: Question, normal: Any) -> Any:
        return frozenset(question.options[i] for i in normal)

    def condition_value_of_support(self, question: Question, support: tuple[int, ...]) -> Any:
        return frozenset(question.options[i] for i in support)

    def sent_as_answered(
        self, options: tuple[str, ...], low: int | None, high: int | None, where: str
    ) -> Mechanism:
        return mech.PlainSelection(len(options))

    def randomized(
        self,
        doc: Mapping[str, Any],
        requested: str,
        options: tuple[str, ...],
        low: int | None,
        high: int | None,
        where: str,
    ) -> Mechanism:
        keep = _keep(doc, requested, where)
        if keep is not None:
            return mech.MultiRR(len(options), keep=keep)
        return mech.MultiRR.from_epsilon(len(options), epsilon=_epsilon(doc, requested, where))

    def truth_of(self, question: Question, value: object) -> int | frozenset[int] | str:
        return question.selection_of(value)

    def answer_hint(self, question: Question) -> str:
        return f"the options that apply, from {_allowed(question)} (none is an answer too)"

    prompt_default = ""

    def prompt(self, question: Question) -> str:
        return "     Your answers (numbers or labels, separated by commas; Enter for none)"

    def from_prompt(self, question: Question, text: str) -> Any:
        value = text.strip()
        if value in question.options:
            return [value]
        return [_one_option(question, part) for part in value.split(",") if part.strip()]

    def explain_lines(
        self, question: Question, _: Translate = english, labels: Sequence[str] | None = None
    ) -> list[str]:
        options = super().explain_lines(question, _, labels)
        return [*options, "   " + _("Select all that apply (or none).")]

    def default_truth(self, question: Question) -> Any:
        """Option i selected with probability 0.4 / (i + 1)."""
        return [0.4 / (i + 1) for i in range(question.k)]

    def draw(self, question: Question, given: Any, rng: Draws) -> object:
        return frozenset(i for i, p in enumerate(given) if rng.random() < p)


def _keep(doc: Mapping[str, Any], name: str, where: str) -> Any:
    """The explicit `{"keep": ...}` of a keep-or-flip mechanism (onebit, multi's rr), or None."""
    if name not in doc:
        return None
    raw = doc[name]
    if not isinstance(raw, dict) or set(raw) != {"keep"}:
        raise fail(f"{where}{name}", f'expected {{"keep": <probability>}}, got {raw!r}')
    keep = parse_probability(raw["keep"], field=f"{where}{name}.keep")
    if not mech.HALF < keep < 1:
        raise fail(
            f"{where}{name}.keep",
            f"must lie strictly between 1/2 and 1 (p*, the chance the report leans "
            f"the true way), got {raw['keep']!r}",
        )
    return keep


def _epsilon(doc: Mapping[str, Any], name: str, where: str) -> Any:
    epsilon = doc.get("epsilon")
    if epsilon is None:
        raise fail(
            f"{where}epsilon",
            f"missing; give an epsilon in [{mech.MIN_EPSILON}, {mech.MAX_EPSILON}] "
            f'or the mechanism\'s parameters ({name}: {{"keep": ...}})',
        )
    return epsilon


class Text(QuestionType):
    """Free text: a sketch (hcms by default, cms or rappor) and the candidates to estimate."""

    name = "text"
    control = "words"
    randomizers = (HCMS, CMS, RAPPOR)
    mechanisms = tuple(m.name for m in randomizers)
    no_split_ballot = "its answer has no plain encoding"
    xlsform_type = "text"
    rows = "candidates"
    crosses = False
    condition_kind = None
    labelled = False
    not_an_outcome = (
        "is a text question, estimated per candidate from its sketch; the outcome must be a "
        "yes/no: a binary question, or one option of a categorical or multi question"
    )

    def resolve(self, doc: Mapping[str, Any], where: str) -> Resolved:
        self.range_of(doc, where)
        if "options" in doc:
            raise fail(f"{where}options", "a text question has candidates, not options")
        names = self.mechanisms
        requested = doc.get("mechanism", names[0])
        if requested not in names:
            raise fail(
                f"{where}mechanism",
                f"{requested!r} does not fit a text question; allowed: {', '.join(names)}",
            )
        refuse_stray_parameters(doc, requested, where)
        field_name = f"{where}{requested}"
        raw = doc.get(requested, {})
        if not isinstance(raw, dict):
            raise fail(field_name, f"expected an object of parameters, got {raw!r}")
        epsilon = doc.get("epsilon")
        if epsilon is not None and (
            isinstance(epsilon, bool) or not isinstance(epsilon, int | float)
        ):
            raise fail(f"{where}epsilon", f"expected a number, got {epsilon!r}")
        try:
            sketch = self._sketch(requested, raw, epsilon, field_name)
        except SurveyError:
            raise
        except ValueError as exc:
            message = str(exc)
            if message.startswith("epsilon:"):
                raise fail(f"{where}epsilon", message.removeprefix("epsilon:").strip()) from None
            if message.startswith(field_name):  # already names its field
                raise SurveyError(message) from None
            raise fail(field_name, message.removeprefix(f"{requested}:").strip()) from None
        check_stated(doc, epsilon, sketch, where)
        candidates = self._candidates_of(doc.get("candidates", []), f"{where}candidates")
        return Resolved(candidates, sketch, requested)

    @staticmethod
    def _sketch(name: str, raw: Mapping[str, Any], epsilon: object, field: str) -> Sketch:
        """The sketch from its parameters (defaults where left out): `keep` or the epsilon
        for cms and hcms; f, p and q (which fix the epsilon) for rappor."""
        allowed = {HCMS.name: {"k", "m", "keep"}, CMS.name: {"k", "m", "keep"}}.get(
            name, {"k", "h", "m", "f", "p", "q"}
        )
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise fail(f"{field}.{unknown[0]}", f"unknown; allowed: {', '.join(sorted(allowed))}")
        params = {**SKETCH_DEFAULTS[name], **raw}
        if name == RAPPOR.name:
            return RAPPOR.from_params(params, field=field)
        k, m = params["k"], params["m"]
        for key, value in (("k", k), ("m", m)):
            if type(value) is not int:
                raise fail(f"{field}.{key}", f"expected a whole number, got {value!r}")
        kind = HCMS if name == HCMS.name else CMS
        if "keep" in raw:
            keep = parse_probability(raw["keep"], field=f"{field}.keep")
            return kind(k=k, m=m, keep=keep)
        if epsilon is None:
            raise fail(
                field.rsplit(".", 1)[0] + ".epsilon" if "." in field else "epsilon",
                f"missing; give an epsilon in [{mech.MIN_EPSILON}, {mech.MAX_EPSILON}] or "
                f'{name}: {{"keep": ...}}',
            )
        return kind.from_epsilon(k=k, m=m, epsilon=epsilon)  # type: ignore[arg-type]

    @staticmethod
    def _candidates_of(raw: object, field: str) -> tuple[str, ...]:
        """Normalized, distinct candidate strings."""
        if not isinstance(raw, list) or len(raw) > MAX_CANDIDATES:
            raise fail(field, f"expected a list of at most {MAX_CANDIDATES} strings, got {raw!r}")
        out: list[str] = []
        for i, item in enumerate(raw):
            given = isinstance(item, str) and is_unicode(item) and not has_control(item)
            text = normalize_text(item) if given else ""
            if not text or len(text) > MAX_TEXT_ANSWER:
                raise fail(
                    f"{field}[{i}]",
                    f"expected a word or phrase of 1 to {MAX_TEXT_ANSWER} characters, got {item!r}",
                )
            if text in out:
                raise fail(f"{field}[{i}]", f"{item!r} is {text!r} again once normalized")
            out.append(text)
        return tuple(out)

    def to_dict(self, question: Question, mechanism: dict[str, Any]) -> dict[str, Any]:
        # The candidates come after the mechanism's parameters, before epsilon.
        head = {"id": question.id, "text": question.text, "type": self.name}
        tail = {key: mechanism[key] for key in ("epsilon", "p_star", "q_star")}
        params = {key: value for key, value in mechanism.items() if key not in tail}
        return {**head, **params, "candidates": question.candidates, **tail}

    def candidates(self, question: Question) -> list[str]:
        return question.options

    def truth_of(self, question: Question, value: object) -> int | frozenset[int] | str:
        return question.text_of(value)

    def answer_hint(self, question: Question) -> str:
        return f"a word or a phrase (up to {MAX_TEXT_ANSWER} characters)"

    numbered = False

    def prompt(self, question: Question) -> str:
        return "     Your answer (a word or a short phrase)"

    def from_prompt(self, question: Question, text: str) -> Any:
        value = text.strip()
        try:
            question.normalize(value)
        except SurveyError:
            raise SurveyError("give a word or a short phrase") from None
        return value

    def noisy_text(self, question: Question, encoded: Any) -> str:
        return f"{json.dumps(encoded)} (a sketch of your answer, randomized)"

    def explain_lines(
        self, question: Question, _: Translate = english, labels: Sequence[str] | None = None
    ) -> list[str]:
        return ["   " + _("Answer in your own words (a word or a short phrase).")]

    def default_truth(self, question: Question) -> Any:
        """A Zipf-like truth (s = 1.1) over the candidates, or twenty made-up words."""
        return zipf(question.candidates or [f"word {i + 1}" for i in range(20)], 1.1)

    def draw(self, question: Question, given: Any, rng: Draws) -> object:
        return rng.choices(list(given), weights=list(given.values()))[0]


def zipf(words: Sequence[str], exponent: float) -> dict[str, float]:
    """Shares proportional to 1 / rank^exponent over the words, the first most frequent."""
    weights = [1.0 / (rank + 1) ** exponent for rank in range(len(words))]
    total = math.fsum(weights)
    return {word: w / total for word, w in zip(words, weights, strict=True)}


#: Every question type by its wire name, in the order docs/surveys.md lists them.
QUESTION_TYPES: dict[str, QuestionType] = {
    kind.name: kind for kind in (Binary(), Categorical(), Integer(), Multi(), Text())
}


#: Every mechanism class a planner takes by name (its `planning`), in the order of the types
#: and their mechanisms: the planners' help lists them so.
PLANNED: tuple[Any, ...] = tuple(
    dict.fromkeys(
        m for kind in QUESTION_TYPES.values() for m in kind.randomizers if m.planning is not None
    )
)


def question_type(name: object, where: str = "") -> QuestionType:
    """The question type named `name`, else SurveyError listing them."""
    if isinstance(name, str) and name in QUESTION_TYPES:
        return QUESTION_TYPES[name]
    shown = ", ".join(repr(t) for t in QUESTION_TYPES)
    raise fail(f"{where}type", f"expected one of {shown}, got {name!r}")


__all__: Sequence[str] = (
    "QUESTION_TYPES",
    "Binary",
    "Categorical",
    "Integer",
    "Multi",
    "QuestionType",
    "Resolved",
    "Text",
    "question_type",
)
