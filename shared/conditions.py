"""Skip logic: the grammar of a question's `relevant` condition, its checks and its evaluation.

A condition says when a question is asked, from the plain answers given before it
(docs/surveys.md#skip-logic). It is parsed by a tokenizer and a recursive-descent parser of our
own and evaluated by walking the tree: nothing is ever evaluated as code. The tree keeps what
was written (parentheses, numbers as written), so XLSForm's `relevant` (aggregator/forms/
relevance.py, the same tree) renders it back exactly. The limits (length,
nesting) are checked before the work. `aggregator/web/static/conditions.js` is the same grammar
for the page; `tests/conformance/conditions.json` holds both to the same results.

    condition  := or ;  or := and ("or" and)* ;  and := not ("and" not)*
    not        := "not" not | "(" condition ")" | comparison
    comparison := operand OP operand | operand "in" "(" literal ("," literal)* ")"
                | literal "in" qid
    OP := == != < <= > >= ;  operand := qid | literal ;  literal := 'text' | "text" | number

Values: a binary question's is 'yes' or 'no', a categorical's its option label, an integer's
its number, a multi question's the set of its selected labels (only `'label' in q` tests it).
A question that was not asked has no value: every comparison and `in` with it is false, except
`!=`, which is true.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from deniable.shared.errors import SurveyError

if TYPE_CHECKING:
    from deniable.shared.survey import Question, Survey

#: The longest condition, in characters (checked before it is read).
MAX_CONDITION = 1000
#: The deepest nesting of parentheses and `not`.
MAX_DEPTH = 32
#: The most digits a number may have: exact in JavaScript's numbers too.
MAX_DIGITS = 15

#: Why a condition is refused, in a word: the same categories as conditions.js's.
Category = Literal[
    "too-long",  # over MAX_CONDITION characters
    "too-deep",  # nested deeper than MAX_DEPTH
    "syntax",  # not a sentence of the grammar
    "unknown-question",  # names no question of the survey
    "later-question",  # names this question or one asked after it
    "randomized-question",  # names a randomized question
    "not-an-option",  # a text that is no option of the question compared with it
    "type-mismatch",  # compares values of different kinds, or orders what is no number
    "constant",  # compares constants only, naming no question
]

Value = str | int | float | frozenset[str]
Number = int | float


class ConditionError(SurveyError):
    """A condition that cannot be read or cannot hold; `category` says why in a word."""

    def __init__(self, category: Category, message: str) -> None:
        super().__init__(message)
        self.category: Category = category


# -- the tree --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """A question named in a condition: its value, or none if it was not asked."""

    qid: str


@dataclass(frozen=True)
class Lit:
    """A literal: a text (an option label, 'yes' or 'no') or a number."""

    value: str | Number
    #: A number as written (`1.50`), so it is rendered back the same; not part of equality.
    written: str | None = field(default=None, compare=False)


Operand = Ref | Lit


@dataclass(frozen=True)
class Compare:
    """`left OP right`."""

    op: str
    left: Operand
    right: Operand


@dataclass(frozen=True)
class OneOf:
    """`operand in (literal, ...)`."""

    operand: Operand
    literals: tuple[Lit, ...]


@dataclass(frozen=True)
class Selected:
    """`'label' in q`: the option is selected in the multi question q."""

    literal: Lit
    question: Ref


@dataclass(frozen=True)
class Not:
    item: Node


@dataclass(frozen=True)
class Group:
    """Parentheses as written: the same truth as `item`, kept so it is rendered back the same."""

    item: Node


@dataclass(frozen=True)
class All:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Any_:
    items: tuple[Node, ...]


Node = Compare | OneOf | Selected | Not | Group | All | Any_

# -- reading ---------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?:
      (?P<op>==|!=|<=|>=|<|>)
    | (?P<punct>[(),])
    | '(?P<single>[^']*)'
    | "(?P<double>[^"]*)"
    | (?P<word>[A-Za-z0-9_.\-]+)
    )""",
    re.VERBOSE,
)
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_QID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_SPACE = " \t\r\n"
KEYWORDS = frozenset({"and", "or", "not", "in"})
OPERATORS = ("==", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class _Token:
    kind: str  # "op", "punct", "text", "number", "keyword", "qid", "end"
    value: Any
    at: int


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i = 0
    while True:
        while i < len(text) and text[i] in _SPACE:
            i += 1
        if i == len(text):
            out.append(_Token("end", None, i))
            return out
        match = _TOKEN.match(text, i)
        if match is None:
            raise ConditionError(
                "syntax",
                f"{text[i]!r} at character {i + 1} cannot start anything; write question ids, "
                "'texts' in quotes, numbers, == != < <= > >=, in (...), and, or, not, parentheses",
            )
        at = match.start(match.lastgroup or 0)
        kind = match.lastgroup
        if kind == "op" or kind == "punct":
            out.append(_Token(kind, match.group(kind), at))
        elif kind in ("single", "double"):
            out.append(_Token("text", match.group(kind), at))
        else:
            word = match.group("word")
            out.append(_word(word, at))
        i = match.end()


def number(word: str) -> Lit:
    """A number literal as written (`-2`, `1.50`); ConditionError past MAX_DIGITS digits."""
    if sum(c.isdigit() for c in word) > MAX_DIGITS:
        raise ConditionError("syntax", f"number {word[:40]} has more than {MAX_DIGITS} digits")
    return Lit(float(word) if "." in word else int(word), word)


def _word(word: str, at: int) -> _Token:
    if _NUMBER.fullmatch(word):
        return _Token("number", number(word), at)
    if word in KEYWORDS:
        return _Token("keyword", word, at)
    if _QID.fullmatch(word):
        return _Token("qid", word, at)
    if word.lower() in KEYWORDS:
        raise ConditionError("syntax", f"write {word.lower()!r} in lower case, not {word!r}")
    raise ConditionError(
        "syntax",
        f"{word[:40]!r} at character {at + 1} is neither a question id (lower-case letters, "
        "digits, '-', '_') nor a number; put a text in quotes",
    )


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        token = self.tokens[self.i]
        if token.kind != "end":
            self.i += 1
        return token

    def at(self, kind: str, value: object = None) -> bool:
        token = self.peek()
        return token.kind == kind and (value is None or token.value == value)

    def expect(self, kind: str, value: str, what: str) -> None:
        if not self.at(kind, value):
            raise self.unexpected(what)

    def unexpected(self, wanted: str) -> ConditionError:
        token = self.peek()
        if token.kind == "end":
            return ConditionError("syntax", f"ends too early; expected {wanted}")
        shown = repr(token.value) if token.kind != "text" else repr(f"'{token.value}'")
        return ConditionError(
            "syntax", f"expected {wanted} at character {token.at + 1}, got {shown[:40]}"
        )

    def condition(self, depth: int) -> Node:
        items = [self.conjunction(depth)]
        while self.at("keyword", "or"):
            self.take()
            items.append(self.conjunction(depth))
        return items[0] if len(items) == 1 else Any_(tuple(items))

    def conjunction(self, depth: int) -> Node:
        items = [self.negation(depth)]
        while self.at("keyword", "and"):
            self.take()
            items.append(self.negation(depth))
        return items[0] if len(items) == 1 else All(tuple(items))

    def negation(self, depth: int) -> Node:
        if self.at("keyword", "not") or self.at("punct", "("):
            if depth >= MAX_DEPTH:
                raise ConditionError(
                    "too-deep", f"nested more than {MAX_DEPTH} levels deep (parentheses and not)"
                )
            if self.take().value == "not":
                return Not(self.negation(depth + 1))
            inner = self.condition(depth + 1)
            self.expect("punct", ")", "')'")
            self.take()
            return Group(inner)
        return self.comparison()

    def operand(self) -> Operand:
        token = self.peek()
        if token.kind == "qid":
            self.take()
            return Ref(token.value)
        if token.kind in ("text", "number"):
            return self.literal()
        raise self.unexpected("a question id, a 'text' or a number")

    def literal(self) -> Lit:
        token = self.peek()
        if token.kind in ("text", "number"):
            self.take()  # a number's token holds its Lit (as written), a text's its text
            return token.value if isinstance(token.value, Lit) else Lit(token.value)
        raise self.unexpected("a 'text' or a number")

    def comparison(self) -> Node:
        left = self.operand()
        if self.at("op"):
            op = self.take().value
            return Compare(op, left, self.operand())
        if self.at("keyword", "in"):
            self.take()
            if self.at("punct", "("):
                self.take()
                literals = [self.literal()]
                while self.at("punct", ","):
                    self.take()
                    literals.append(self.literal())
                self.expect("punct", ")", "',' or ')'")
                self.take()
                return OneOf(left, tuple(literals))
            if self.at("qid"):
                if isinstance(left, Ref):
                    raise ConditionError(
                        "syntax",
                        f"write an option in quotes before in {self.peek().value}, "
                        f"not the question {left.qid!r}",
                    )
                return Selected(left, Ref(self.take().value))
            raise self.unexpected("'(' or a question id after in")
        raise self.unexpected("one of == != < <= > >= or in")


@dataclass(frozen=True)
class Condition:
    """A parsed condition: its text and its tree."""

    text: str
    tree: Node

    @property
    def questions(self) -> tuple[str, ...]:
        """The question ids it names, in order of first appearance."""
        return tuple(dict.fromkeys(ref.qid for ref in refs(self.tree)))

    def evaluate(self, values: Mapping[str, Value]) -> bool:
        """Whether it holds for `values` (question id -> its value; absent: not asked)."""
        return evaluate(self.tree, values)


def parse(text: object) -> Condition:
    """Read a condition (ConditionError says why not; limits are checked before reading)."""
    if not isinstance(text, str):
        raise ConditionError("syntax", f"expected a condition as text, got {text!r:.60}")
    if len(text) > MAX_CONDITION:
        raise ConditionError("too-long", f"at most {MAX_CONDITION} characters, got {len(text)}")
    parser = _Parser(_tokens(text))
    if parser.at("end"):
        raise ConditionError("syntax", "empty; write a condition such as smokes == 'yes'")
    tree = parser.condition(0)
    if not parser.at("end"):
        raise parser.unexpected("and, or, or the end")
    return Condition(text, tree)


def refs(node: Node | Operand) -> Iterator[Ref]:
    """Every question reference of a tree, left to right (without recursion limits: the tree
    is at most MAX_DEPTH deep)."""
    if isinstance(node, Ref):
        yield node
    elif isinstance(node, Compare):
        yield from refs(node.left)
        yield from refs(node.right)
    elif isinstance(node, OneOf):
        yield from refs(node.operand)
    elif isinstance(node, Selected):
        yield from refs(node.literal)
        yield node.question
    elif isinstance(node, Not | Group):
        yield from refs(node.item)
    elif isinstance(node, All | Any_):
        for item in node.items:
            yield from refs(item)


# -- evaluating ------------------------------------------------------------------------------

_MISSING = object()


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


def _value(operand: Operand, values: Mapping[str, Value]) -> object:
    if isinstance(operand, Lit):
        return operand.value
    return values.get(operand.qid, _MISSING)


def _same(a: object, b: object) -> bool:
    """Equality as conditions.js has it: numbers by value, texts by their characters, and a
    number never equals a text."""
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False


def _compare(op: str, a: object, b: object) -> bool:
    if a is _MISSING or b is _MISSING:
        return op == "!="
    if op == "==":
        return _same(a, b)
    if op == "!=":
        return not _same(a, b)
    if not (_is_number(a) and _is_number(b)):
        return False
    x: Any = a
    y: Any = b
    return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


def evaluate(node: Node, values: Mapping[str, Value]) -> bool:
    """Whether the tree holds for `values` (question id -> value; a question not asked is
    absent). Multi values are sets (or lists) of labels."""
    if isinstance(node, Compare):
        return _compare(node.op, _value(node.left, values), _value(node.right, values))
    if isinstance(node, OneOf):
        value = _value(node.operand, values)
        return value is not _MISSING and any(_same(value, lit.value) for lit in node.literals)
    if isinstance(node, Selected):
        label = _value(node.literal, values)
        chosen = values.get(node.question.qid, _MISSING)
        if not isinstance(label, str) or not isinstance(chosen, frozenset | set | list | tuple):
            return False
        return label in chosen
    if isinstance(node, Not):
        return not evaluate(node.item, values)
    if isinstance(node, Group):
        return evaluate(node.item, values)
    if isinstance(node, All):
        return all(evaluate(item, values) for item in node.items)
    return any(evaluate(item, values) for item in node.items)


# -- checking against a survey ---------------------------------------------------------------

#: What a question's value is in a condition, by its type's `condition_kind`.
_KIND_WORDS = {"label": "a choice", "number": "a number", "set": "a select-all question"}


def check(condition: Condition, questions: Sequence[Question], position: int) -> None:
    """Refuse a condition on `questions[position]` that names a question not asked before it,
    a randomized one, an option its question lacks, or compares values of different kinds."""
    earlier = {q.id: q for q in questions[:position]}
    later = {q.id for q in questions[position:]}
    for ref in refs(condition.tree):
        _question(ref, earlier, later)
    _check_node(condition.tree, earlier, later)


def _question(ref: Ref, earlier: Mapping[str, Question], later: set[str]) -> Question:
    if ref.qid in later:
        raise ConditionError(
            "later-question",
            f"names {ref.qid!r}, which is not asked before this question; a condition can only "
            "name questions asked earlier",
        )
    question = earlier.get(ref.qid)
    if question is None:
        raise ConditionError(
            "unknown-question",
            f"names {ref.qid!r}, but the survey has no such question; questions asked before "
            f"this one: {', '.join(earlier) or 'none'}",
        )
    if not question.plain:
        raise ConditionError(
            "randomized-question",
            f"names {ref.qid!r}, a randomized question: whether the follow-up is answered would "
            f"reveal the true answer; make {ref.qid!r} plain (mechanism none) or drop the "
            "condition",
        )
    if question.kind.condition_kind is None:
        raise ConditionError(
            "type-mismatch", f"names {ref.qid!r}, whose answers a condition cannot test"
        )
    return question


def _kind_of(operand: Operand, earlier: Mapping[str, Question]) -> str:
    if isinstance(operand, Ref):
        return str(earlier[operand.qid].kind.condition_kind)
    return "number" if _is_number(operand.value) else "text"


def _check_literal(lit: Lit, question: Question) -> None:
    kind = question.kind.condition_kind
    if kind == "number":
        if not _is_number(lit.value):
            raise ConditionError(
                "type-mismatch",
                f"compares {question.id!r}, a number, with the text {lit.value!r}; write the "
                "number without quotes",
            )
        return
    if not isinstance(lit.value, str):
        raise ConditionError(
            "type-mismatch",
            f"compares {question.id!r}, {_KIND_WORDS[str(kind)]}, with the number {lit.value}; "
            f"write one of its options in quotes: {_options(question)}",
        )
    if lit.value not in question.options:
        raise ConditionError(
            "not-an-option",
            f"{lit.value!r} is not an option of {question.id!r}; its options: {_options(question)}",
        )


def _options(question: Question) -> str:
    return ", ".join(repr(o) for o in question.options)


def _check_node(node: Node, earlier: Mapping[str, Question], later: set[str]) -> None:
    if isinstance(node, Not | Group):
        _check_node(node.item, earlier, later)
    elif isinstance(node, All | Any_):
        for item in node.items:
            _check_node(item, earlier, later)
    elif isinstance(node, Compare):
        _check_compare(node, earlier)
    elif isinstance(node, OneOf):
        if not isinstance(node.operand, Ref):
            raise ConditionError(
                "constant", "tests a constant with in (...); test a question: q in ('a', 'b')"
            )
        question = earlier[node.operand.qid]
        if question.kind.condition_kind == "set":
            raise _set_misuse(question)
        for lit in node.literals:
            _check_literal(lit, question)
    else:
        assert isinstance(node, Selected)
        question = earlier[node.question.qid]
        if question.kind.condition_kind != "set":
            raise ConditionError(
                "type-mismatch",
                f"'...' in {question.id!r} tests a select-all question, and {question.id!r} is "
                f"{_KIND_WORDS[str(question.kind.condition_kind)]}; write "
                f"{question.id} == '...' or {question.id} in ('...', '...')",
            )
        _check_literal(node.literal, question)


def _set_misuse(question: Question) -> ConditionError:
    return ConditionError(
        "type-mismatch",
        f"{question.id!r} is a select-all question: test one option with "
        f"'<option>' in {question.id}",
    )


def _check_compare(node: Compare, earlier: Mapping[str, Question]) -> None:
    left, right = node.left, node.right
    if isinstance(left, Lit) and isinstance(right, Lit):
        raise ConditionError(
            "constant", "compares two constants; name a question, e.g. smokes == 'yes'"
        )
    for side in (left, right):
        if isinstance(side, Ref) and earlier[side.qid].kind.condition_kind == "set":
            raise _set_misuse(earlier[side.qid])
    if node.op not in ("==", "!=") and (
        _kind_of(left, earlier) != "number" or _kind_of(right, earlier) != "number"
    ):
        raise ConditionError(
            "type-mismatch", f"{node.op} orders numbers only: compare integer questions"
        )
    if isinstance(left, Ref) and isinstance(right, Ref):
        a, b = _kind_of(left, earlier), _kind_of(right, earlier)
        if a != b:
            raise ConditionError(
                "type-mismatch",
                f"compares {left.qid!r}, {_KIND_WORDS[a]}, with {right.qid!r}, {_KIND_WORDS[b]}",
            )
        return
    ref, lit = (left, right) if isinstance(left, Ref) else (right, left)
    assert isinstance(ref, Ref) and isinstance(lit, Lit)
    _check_literal(lit, earlier[ref.qid])


# -- in words --------------------------------------------------------------------------------


def show_value(value: Value | None) -> str:
    """A question's value as a reason shows it: 'yes', 3, or the labels selected."""
    if value is None:
        return "not asked"
    if isinstance(value, frozenset | set | list | tuple):
        labels = sorted(str(v) for v in value)
        return "selected " + ", ".join(repr(v) for v in labels) if labels else "selected none"
    return f"{value!r}"


def why_skipped(condition: Condition, values: Mapping[str, Value]) -> str:
    """Why a question was not asked: "not asked when smokes is 'no' (its condition: ...)"."""
    parts = []
    for qid in condition.questions:
        value = values.get(qid)
        shown = show_value(value)
        if value is None:
            parts.append(f"{qid} was not asked")
        elif shown.startswith("selected"):
            parts.append(f"{qid} has {shown}")
        else:
            parts.append(f"{qid} is {shown}")
    return f"not asked when {' and '.join(parts)} (its condition: {condition.text})"


def relevant_from_answers(survey: Survey, answers: Mapping[str, object]) -> list[str]:
    """The questions a report must hold, given its plain wire answers (binary 0/1, a
    categorical's index, an integer's value, a multi's bit string); SurveyError if one of the
    plain answers a condition reads is not valid. See `Survey.relevant_from_answers`."""
    return survey.relevant_from_answers(answers)


__all__ = [
    "MAX_CONDITION",
    "MAX_DEPTH",
    "All",
    "Any_",
    "Compare",
    "Condition",
    "ConditionError",
    "Group",
    "Lit",
    "Node",
    "Not",
    "OneOf",
    "Ref",
    "Selected",
    "check",
    "evaluate",
    "number",
    "parse",
    "refs",
    "relevant_from_answers",
    "show_value",
    "why_skipped",
]
