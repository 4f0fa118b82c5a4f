"""Regression formulas as data: our own grammar, checked before formulaic sees anything, and a
materializer that evaluates factors without Python's `eval`, builtins or formulaic's transforms.

A formula is `outcome ~ covariates`. The outcome is a question id, or `id[option]`. The
covariates are question ids (bare, or in backticks: `` `age-group` ``), `C(id)`, `I(...)` of
ids, numbers and `+ - * / **`, joined by `+ - * / : **` and parentheses, with `1`, `0`, `-1`
or `+0` for the intercept. Everything else is refused with an `AnalysisError` that names the
piece (docs/statistics.md, "Formulas"). Nothing of a formula is ever evaluated as Python.
"""

from __future__ import annotations

import ast
import functools
import keyword
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from deniable.aggregator.stats.errors import AnalysisError
from deniable.shared.survey import QUESTION_ID

#: Characters in a formula (the API and the dashboard hold the same bound).
MAX_LENGTH = 2000
#: Nesting of parentheses, calls and signs.
MAX_DEPTH = 20
#: Largest power of terms, `(a + b) ** 3`.
MAX_POWER = 8
#: Term products the formula expands to (formulaic forms each one while parsing).
MAX_EXPANSION = 20_000

ACCEPTED = (
    "accepted: question ids (in backticks when they hold '-'), numbers, + - * / ** : and "
    "parentheses, C(id), I(arithmetic of ids and numbers), and 1, 0, -1 or +0 for the intercept"
)

_OUTCOME = re.compile(r"^\s*(`?)([a-z0-9][a-z0-9_-]{0,63})\1\s*(?:\[\s*(.+?)\s*\])?\s*$")
_TOKEN = re.compile(
    r"(?P<space>[ \t\r\n]+)"
    r"|(?P<number>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"
    r"|(?P<quoted>`[^`]*`)"
    r"|(?P<call>[A-Za-z_][A-Za-z0-9_]*\()"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>\*\*|[-+*/:()])"
)
#: What a refused character usually means, for the message.
_MEANING = {
    ".": "attribute access",
    "[": "a subscript (only the outcome takes [option])",
    "]": "a subscript (only the outcome takes [option])",
    "{": "a {...} block of Python",
    "}": "a {...} block of Python",
    "'": "a string",
    '"': "a string",
    ",": "a second argument",
    "=": "an assignment or keyword argument",
    "`": "an unclosed backtick",
    "~": "a second '~'",
}


class FormulaError(AnalysisError):
    """A formula outside the grammar; the message names the piece and what is accepted."""


def _refuse(piece: str, why: str) -> FormulaError:
    return FormulaError(f"formula: {piece!r} is not accepted ({why}); {ACCEPTED}")


# -- tokens and syntax tree ----------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    """One token of the right-hand side and where it starts."""

    kind: str  # number, id, call, op, end
    text: str
    at: int
    backticked: bool = False


@dataclass(frozen=True)
class Node:
    """A node of the parsed right-hand side: id, num, C, I, neg, or an operator with two sides."""

    kind: str
    text: str = ""
    children: tuple[Node, ...] = ()
    backticked: bool = False


def _tokens(text: str) -> list[Token]:
    tokens: list[Token] = []
    at = 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            char = text[at]
            if not char.isascii() or not char.isprintable():
                raise _refuse(char, f"the character U+{ord(char):04X}")
            raise _refuse(text[at : at + 12], _MEANING.get(char, f"the character {char!r}"))
        kind, piece = match.lastgroup or "", match.group()
        if kind == "quoted":
            inner = piece[1:-1]
            if not QUESTION_ID.fullmatch(inner):
                raise _refuse(
                    piece, "a question id in backticks: lower-case letters, digits, - and _"
                )
            tokens.append(Token("id", inner, at, backticked=True))
        elif kind == "call":
            name = piece[:-1]
            if name not in ("C", "I"):
                raise _refuse(piece + "...)", "a call; the only calls are C(id) and I(...)")
            tokens.append(Token("call", name, at))
        elif kind == "name":
            tokens.append(Token("id", _bare_id(piece), at))
        elif kind != "space":
            tokens.append(Token(kind, piece, at))
        at = match.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


def _bare_id(name: str) -> str:
    if "__" in name:
        raise _refuse(name, "a name with '__'; an id that holds '__' goes in backticks")
    if keyword.iskeyword(name) or name in ("in", "C", "I"):
        raise _refuse(name, f"a reserved word; a question id spelt so goes in backticks: `{name}`")
    if not QUESTION_ID.fullmatch(name):
        raise _refuse(name, "not a question id: lower-case letters, digits, - and _")
    return name


class _Parser:
    """Recursive descent over the tokens: Wilkinson operators outside I(...), arithmetic in it."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0
        self.depth = 0

    @property
    def next(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def fail(self, why: str) -> FormulaError:
        token = self.next
        near = f"at {token.text!r}" if token.kind != "end" else "at its end"
        shown = self.text.strip()
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        return FormulaError(f"formula: cannot parse {shown!r} {near}: {why}; {ACCEPTED}")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FormulaError(
                f"formula: nested deeper than {MAX_DEPTH} (parentheses, calls, signs, operators in I()); "
                "write it flatter"
            )

    def expect(self, text: str) -> None:
        if self.next.kind != "op" or self.next.text != text:
            raise self.fail(f"expected {text!r}")
        self.take()

    def parse(self) -> Node | None:
        if self.next.kind == "end":
            return None
        node = self.formula_sum(top=True)
        if self.next.kind != "end":
            raise self.fail("expected an operator between two terms")
        return node

    # Wilkinson operators, loosest first: + -, then * /, then :, then **.
    def formula_sum(self, top: bool = False) -> Node:
        if top and self.next.kind == "op" and self.next.text in "+-":
            sign = self.take().text
            if self.next.kind != "number":
                raise self.fail(
                    f"a leading {sign!r} goes before 1 or 0 (-1 + a drops the intercept)"
                )
            first = Node("neg" if sign == "-" else "pos", children=(Node("num", self.take().text),))
        else:
            first = self.formula_product()
        return self.chain(first, "+-", self.formula_product)

    def formula_product(self) -> Node:
        return self.chain(self.formula_interaction(), "*/", self.formula_interaction)

    def formula_interaction(self) -> Node:
        return self.chain(self.formula_power(), ":", self.formula_power)

    def chain(self, first: Node, ops: str, operand: Callable[[], Node]) -> Node:
        """`first op operand op operand...` as one flat node (ops in `text`, left to right), so
        that a long sum needs no deep recursion to read."""
        parts, seen = [first], ""
        while self.next.kind == "op" and self.next.text in ops:
            seen += self.take().text
            parts.append(operand())
        return Node("chain", seen, tuple(parts)) if seen else first

    def formula_power(self) -> Node:
        node = self.formula_atom()
        if self.next.kind == "op" and self.next.text == "**":
            self.take()
            power = self.next
            if (
                power.kind != "number"
                or not power.text.isdigit()
                or not 1 <= int(power.text) <= MAX_POWER
            ):
                raise self.fail(f"the power of terms is a whole number from 1 to {MAX_POWER}")
            self.take()
            node = Node("**", power.text, (node,))
        return node

    def formula_atom(self) -> Node:
        token = self.next
        if token.kind == "id":
            self.take()
            return Node("id", token.text, backticked=token.backticked)
        if token.kind == "number":
            self.take()
            return Node("num", token.text)
        if token.kind == "call":
            return self.call()
        if token.kind == "op" and token.text == "(":
            self.take()
            self.enter()
            node = self.formula_sum()
            self.expect(")")
            self.depth -= 1
            return node
        raise self.fail("expected a question id, C(id), I(...) or '('")

    def call(self) -> Node:
        name = self.take().text
        self.enter()
        if name == "C":
            token = self.next
            if token.kind != "id":
                raise self.fail("C(...) takes one question id")
            self.take()
            self.expect(")")
            node = Node("C", token.text, backticked=token.backticked)
        else:
            inner = self.arithmetic()
            self.expect(")")
            node = Node("I", children=(inner,))
        self.depth -= 1
        return node

    # Arithmetic inside I(...): Python's precedence (+ -, then * /, then unary -, then **).
    def arithmetic(self) -> Node:
        return self.nested(self.arithmetic_product(), "+-", self.arithmetic_product)

    def arithmetic_product(self) -> Node:
        return self.nested(self.arithmetic_unary(), "*/", self.arithmetic_unary)

    def nested(self, node: Node, ops: str, operand: Callable[[], Node]) -> Node:
        """Left-nested binary nodes, as Python's own tree has them; each level counts toward
        MAX_DEPTH (the evaluator walks the same depth)."""
        levels = 0
        while self.next.kind == "op" and self.next.text in ops:
            op = self.take().text
            self.enter()
            levels += 1
            node = Node(op, children=(node, operand()))
        self.depth -= levels
        return node

    def arithmetic_unary(self) -> Node:
        if self.next.kind == "op" and self.next.text == "-":
            self.take()
            self.enter()
            node = Node("neg", children=(self.arithmetic_unary(),))
            self.depth -= 1
            return node
        node = self.arithmetic_atom()
        if self.next.kind == "op" and self.next.text == "**":
            self.take()
            self.enter()
            node = Node("**", children=(node, self.arithmetic_unary()))
            self.depth -= 1
        return node

    def arithmetic_atom(self) -> Node:
        token = self.next
        if token.kind == "id":
            self.take()
            return Node("id", token.text, backticked=token.backticked)
        if token.kind == "number":
            self.take()
            return Node("num", token.text)
        if token.kind == "op" and token.text == "(":
            self.take()
            self.enter()
            node = self.arithmetic()
            self.expect(")")
            self.depth -= 1
            return node
        if token.kind == "call":
            raise self.fail("inside I(...) only ids, numbers, + - * / ** and parentheses")
        raise self.fail("expected a question id, a number or '(' inside I(...)")


# -- terms ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Factor:
    """One factor of a term as formulaic sees it: a question as written (`id`), C(id) or I(...).
    `key` is formulaic's expression for it; `lone` is the id when I(...) holds just one."""

    kind: str
    key: str
    ids: tuple[str, ...]
    lone: str | None = None


Term = frozenset[Factor]


@dataclass(frozen=True)
class ParsedFormula:
    """A formula that fits the grammar: its outcome, its terms in order, every id it names."""

    text: str
    outcome: str
    option: str | None
    rhs: str
    intercept: bool
    terms: tuple[Term, ...]
    ids: tuple[str, ...]


def _render(node: Node) -> str:
    """Python text of an I(...) expression, as formulaic normalizes it (ast.unparse)."""
    if node.kind == "id":
        return f"`{node.text}`" if node.backticked else node.text
    if node.kind == "num":
        return node.text
    if node.kind == "neg":
        return f"(-{_render(node.children[0])})"
    left, right = (_render(child) for child in node.children)
    return f"({left} {node.kind} {right})"


def _ids(node: Node) -> list[str]:
    found = [node.text] if node.kind in ("id", "C") else []
    for child in node.children:
        found.extend(_ids(child))
    return found


def _factor(node: Node) -> Factor:
    if node.kind == "id":
        return Factor("id", node.text, (node.text,))
    if node.kind == "C":
        shown = f"`{node.text}`" if node.backticked else node.text
        return Factor("C", f"C({shown})", (node.text,))
    inner = node.children[0]
    lone = inner.text if inner.kind == "id" else None
    ids = tuple(dict.fromkeys(_ids(inner)))
    if not ids:
        raise _refuse(
            f"I({_render(inner)})",
            "names no question, so it is the same number for every report: a constant is the "
            "intercept, written 1 (or -1 / +0 to leave it out)",
        )
    return Factor("I", _normalized(f"I({_render(inner)})"), ids, lone)


def _normalized(expr: str) -> str:
    """formulaic's spelling of a Python factor: backticked ids kept, the rest ast.unparse'd."""
    names: dict[str, str] = {}

    def hide(match: re.Match[str]) -> str:
        return names.setdefault(match.group(), f"_backticked_{len(names)}_")

    text = ast.unparse(ast.parse(re.sub(r"`[^`]*`", hide, expr), mode="eval"))
    for original, placeholder in names.items():
        text = text.replace(placeholder, original)
    return text


def _misplaced_number(text: str) -> FormulaError:
    return FormulaError(
        f"formula: the number {text!r} is not accepted here; 1, 0, -1 or +0 (the intercept) go "
        f"at the top level, a power after **, other numbers inside I(...); {ACCEPTED}"
    )


class _Expansion:
    """The Wilkinson algebra on ordered term sets, counting the products formulaic will form."""

    def __init__(self) -> None:
        self.work = 0

    def spend(self, products: float) -> None:
        self.work += products
        if self.work > MAX_EXPANSION:
            raise FormulaError(
                f"formula: expands to more than {MAX_EXPANSION:,} products of terms; write "
                "fewer interactions or a lower power"
            )

    def terms(self, node: Node) -> dict[Term, None]:
        kind = node.kind
        if kind in ("id", "C", "I"):
            return {frozenset((_factor(node),)): None}
        if kind in ("num", "neg", "pos"):
            raise _misplaced_number(node.text or node.children[0].text)
        if kind == "**":
            base = self.terms(node.children[0])
            power = int(node.text)
            self.spend(float(len(base)) ** power)
            result = dict(base)
            for _ in range(power - 1):
                result = {a | b: None for a in result for b in base}
            return result
        if kind != "chain":  # pragma: no cover - the parser makes no other node
            raise FormulaError(f"formula: cannot read {node.kind!r}")
        result = self.terms(node.children[0])
        for op, child in zip(node.text, node.children[1:], strict=True):
            result = self.combine(op, result, self.terms(child))
        return result

    def combine(
        self, kind: str, left: dict[Term, None], right: dict[Term, None]
    ) -> dict[Term, None]:
        """`left kind right` for one of the operators + - : * /."""
        if kind == "+":
            return {**left, **right}
        if kind == "-":
            return {term: None for term in left if term not in right}
        self.spend(len(left) * len(right))
        if kind == ":":
            return {a | b: None for a in left for b in right}
        if kind == "*":
            return {**left, **right, **{a | b: None for a in left for b in right}}
        common = frozenset().union(*left)  # "/": a / b is a + a:b
        return {**left, **{common | b: None for b in right}}

    def top(self, node: Node | None) -> tuple[bool, dict[Term, None]]:
        """The intercept and the terms of the right-hand side's top-level sum."""
        chain: list[tuple[str, Node]] = []
        if node is not None and node.kind == "chain" and node.text[0] in "+-":
            chain = list(zip("+" + node.text, node.children, strict=True))
        elif node is not None:
            chain = [("+", node)]
        intercept, terms = True, {}
        for sign, part in chain:
            if part.kind in ("neg", "pos"):
                sign = "-" if (sign == "-") != (part.kind == "neg") else "+"
                part = part.children[0]
            if part.kind == "num":
                if part.text not in ("0", "1"):
                    raise _misplaced_number(part.text)
                intercept = (sign == "+") == (part.text == "1")
            elif sign == "+":
                terms.update(self.terms(part))
            else:
                removed = self.terms(part)
                terms = {term: None for term in terms if term not in removed}
        return intercept, terms


def parse(formula: object) -> ParsedFormula:
    """Check `formula` against the grammar: its outcome, intercept and terms, or FormulaError."""
    if not isinstance(formula, str) or "~" not in formula:
        raise FormulaError(
            f"formula: expected 'outcome ~ covariates', e.g. 'smokes ~ region + adult', got "
            f"{str(formula)[:80]!r}"
        )
    if len(formula) > MAX_LENGTH:
        raise FormulaError(
            f"formula: {len(formula):,} characters, over the limit of {MAX_LENGTH:,}; write a "
            "shorter formula"
        )
    lhs, _, rhs = formula.partition("~")
    match = _OUTCOME.match(lhs)
    if not match:
        raise FormulaError(
            f"formula: the outcome {lhs.strip()[:80]!r} is not a question; write e.g. "
            "'smokes ~ region' or 'party[B] ~ region'"
        )
    _, outcome, label = match.groups()
    tree = _Parser(rhs).parse()
    intercept, terms = _Expansion().top(tree)
    if not intercept and not terms:
        raise FormulaError(
            "formula: no intercept and no covariates leave nothing to fit; write e.g. "
            f"'{outcome} ~ 1'"
        )
    # Every id written, removed terms' too: `age - group` for `age-group` must not pass unseen.
    ids = sorted(set(_ids(tree))) if tree is not None else []
    return ParsedFormula(
        text=formula,
        outcome=outcome,
        option=None if label is None else label.strip("'\""),
        rhs=rhs.strip() or "1",
        intercept=intercept,
        terms=tuple(terms),
        ids=tuple(ids),
    )


def terms_tree(rhs: str) -> Node | None:
    """The syntax tree of a right-hand side that parse() accepted (for writing it out again in
    another language: analysis.R); None for an empty one."""
    return _Parser(rhs).parse()


# -- model columns -------------------------------------------------------------------------


def model_columns(parsed: ParsedFormula, levels: Callable[[Factor], int | None], limit: int) -> int:
    """Columns of the model matrix, counted before it is built: with a factor's `levels` (None
    for a number), the dimension of the span of the terms under treatment coding (formulaic's
    structurally full-rank coding). Stops counting once over `limit`."""
    seen: set[tuple[frozenset[Factor], frozenset[Factor]]] = set()
    size: dict[Factor, int] = {}
    starts: list[tuple[frozenset[Factor], frozenset[Factor]]] = []
    if parsed.intercept:
        starts.append((frozenset(), frozenset()))
    for term in parsed.terms:
        categorical, numeric = set(), set()
        for factor in term:
            count = levels(factor)
            if count is None:
                numeric.add(factor)
            elif count >= 2:  # a category with one level adds no column to any subterm
                categorical.add(factor)
                size[factor] = count
        starts.append((frozenset(categorical), frozenset(numeric)))
    total = 0
    for start in starts:
        stack = [start]
        while stack:
            pair = stack.pop()
            if pair in seen:
                continue
            seen.add(pair)
            total += math.prod(size[f] - 1 for f in pair[0])
            if total > limit:
                return total
            stack.extend((pair[0] - {f}, pair[1]) for f in pair[0])
    return total


# -- materializing without eval ------------------------------------------------------------


def _identity(value: Any) -> Any:
    return value


_ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


@functools.cache
def _context() -> Mapping[str, Any]:
    """The whole evaluation context formulaic gets: C and I; no builtins, numpy or transforms."""
    from formulaic.transforms import C

    return MappingProxyType({"C": C, "I": _identity})


@functools.cache
def materializer() -> type:
    """formulaic's pandas materializer, except that a factor is looked up in the data or
    evaluated by `evaluate` (no `eval`, no builtins), and the context is `_context()` alone.
    Built on first use: importing formulaic takes a while."""
    from formulaic.materializers import PandasMaterializer
    from formulaic.utils.layered_mapping import LayeredMapping
    from formulaic.utils.variables import Variable
    from interface_meta import override

    class DataOnlyMaterializer(PandasMaterializer):  # type: ignore[misc]
        REGISTER_NAME = None  # never chosen by formulaic for anyone else's data
        REGISTER_INPUTS = ()

        def __init__(self, data: Any, context: Any = None, **params: Any):
            super().__init__(data, context=_context(), **params)
            self.layered_context = LayeredMapping(
                LayeredMapping(self.data_context, name="data"),
                LayeredMapping(_context(), name="context"),
            )

        @override
        def _lookup(self, name: str) -> tuple[Any, set[Any]]:
            if name not in self.data_context:
                raise NameError(f"`{name}` is not a column of the data")
            return self.data_context[name], {Variable(name, roles=("value",), source="data")}

        @override
        def _evaluate(self, expr: str, metadata: Any, spec: Any) -> tuple[Any, set[Any]]:
            value, names = evaluate(expr, self.data_context)
            return value, {Variable(name, roles=("value",), source="data") for name in names}

    return DataOnlyMaterializer


def evaluate(expr: str, data: Mapping[str, Any]) -> tuple[Any, set[str]]:
    """Value of a factor expression formulaic hands over, walking its syntax tree with an
    allowlist: C(column), I(arithmetic of columns and numbers). Anything else raises."""
    names: dict[str, str] = {}

    def hide(match: re.Match[str]) -> str:
        placeholder = f"_column_{len(names)}_"
        names[placeholder] = match.group()[1:-1]
        return placeholder

    if len(expr) > MAX_LENGTH:
        raise AnalysisError("formula: a factor longer than the formula limit")
    try:
        tree = ast.parse(re.sub(r"`[^`]*`", hide, expr), mode="eval")
    except SyntaxError:
        raise AnalysisError(f"formula: cannot evaluate {expr[:80]!r}") from None
    used: set[str] = set()

    def column(node: ast.AST) -> Any:
        if not isinstance(node, ast.Name) or "__" in node.id:
            raise AnalysisError(f"formula: {ast.unparse(node)[:80]!r} is not a question id")
        name = names.get(node.id, node.id)
        if name not in data:
            raise AnalysisError(f"formula: {name[:80]!r} is not a column of the data")
        used.add(name)
        return data[name]

    def arithmetic(node: ast.AST, depth: int) -> Any:
        if depth > 2 * MAX_DEPTH:
            raise AnalysisError("formula: nested too deep")
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            # numpy floats: a power of two constants cannot grow unbounded, and overflow or a
            # division by zero gives inf or nan (refused below), never an exception.
            try:
                return np.float64(node.value)
            except OverflowError:
                raise AnalysisError(
                    f"formula: the number {str(node.value)[:20]}... is too large"
                ) from None
        if isinstance(node, ast.Name):
            return column(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = arithmetic(node.operand, depth + 1)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            left = arithmetic(node.left, depth + 1)
            right = arithmetic(node.right, depth + 1)
            return _ARITHMETIC[type(node.op)](left, right)
        raise AnalysisError(f"formula: {ast.unparse(node)[:80]!r} is not arithmetic of ids")

    body = tree.body
    if (
        isinstance(body, ast.Call)
        and isinstance(body.func, ast.Name)
        and body.func.id in ("C", "I")
        and len(body.args) == 1
        and not body.keywords
    ):
        call = _context()[body.func.id]
        if body.func.id == "C":
            return call(column(body.args[0])), used
        with np.errstate(all="ignore"):
            value = np.asarray(arithmetic(body.args[0], 1))
        if not np.isrealobj(value) or not np.all(np.isfinite(value)):
            raise AnalysisError(
                f"formula: {expr[:80]} is not a finite number for every report (a division by "
                "zero, an overflow or a root of a negative number); change the expression"
            )
        return call(value), used
    raise AnalysisError(f"formula: {expr[:80]!r} is not C(id) or I(...)")


def model_matrix(parsed: ParsedFormula, frame: Any) -> Any:
    """The model matrix of the formula's right-hand side on `frame` (a pandas DataFrame)."""
    from formulaic import Formula

    if not isinstance(parsed, ParsedFormula) or "~" in parsed.rhs:
        raise AnalysisError("formula: parse it with formula.parse first")
    spec = Formula(parsed.rhs, _ordering="none")
    return materializer()(frame).get_model_matrix(spec)
