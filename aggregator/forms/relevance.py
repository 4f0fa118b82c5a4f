"""Skip logic between XLSForm's `relevant` syntax and deniable's conditions (docs/xlsform.md).

Both are parsed into one small tree, never evaluated: XLSForm's `${q}`, `=`, `!=`, `<`,
`<=`, `>`, `>=`, `selected(${q}, 'name')`, `and`, `or`, `not(...)` and parentheses, and
deniable's condition grammar (docs/surveys.md#skip-logic). A choice's name in XLSForm is its
label in deniable, so every string compared with a question goes through `literal`, which maps
it (name -> label on import, label -> name on export). Rendering is canonical, so a condition
imported, exported and imported again is the same text (the survey keeps its hash). `answered`
turns ODK's "was it answered" (`${q} != ''`) into "was it asked" (q's own condition), and
`renamed` names questions by their ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

#: The longest condition text read, and the deepest nesting (as deniable's grammar bounds).
MAX_CONDITION = 1000
MAX_DEPTH = 32


class ConditionError(ValueError):
    """A condition that cannot be translated; the message says what and what to write."""


@dataclass(frozen=True)
class Ref:
    """A question named in a condition."""

    qid: str


@dataclass(frozen=True)
class Text:
    """A string literal (a choice's name or label)."""

    value: str


@dataclass(frozen=True)
class Number:
    """A number literal, kept as written."""

    text: str


Operand = Ref | Text | Number


@dataclass(frozen=True)
class Compare:
    """`left op right`."""

    op: str  # deniable's spelling: == != < <= > >=
    left: Operand
    right: Operand


@dataclass(frozen=True)
class Selected:
    """A choice selected in a question: XLSForm's selected(), deniable's `'label' in q`."""

    qid: str
    value: str


@dataclass(frozen=True)
class InList:
    """deniable's `operand in (a, b)`."""

    operand: Operand
    values: tuple[Text | Number, ...]


@dataclass(frozen=True)
class Group:
    """Parentheses written in the condition (kept, so rendering is exact)."""

    inner: Node


@dataclass(frozen=True)
class Not:
    """A negation."""

    inner: Node


@dataclass(frozen=True)
class Junction:
    """Parts joined by `and` or by `or`."""

    word: str  # "and" or "or"
    parts: tuple[Node, ...]


Node = Compare | Selected | InList | Group | Not | Junction
#: (question id, string compared with it) -> the string in the other syntax.
Literal = Callable[[str, str], str]

SUPPORTED = (
    "${q}, strings, numbers, =, !=, <, <=, >, >=, selected(${q}, 'name'), and, or, not(...) "
    "and parentheses"
)

_XLSFORM_TOKEN = re.compile(
    r"""\s*(?:
      (?P<ref>\$\{[^}]*\})
    | (?P<str>'[^']*'|"[^"]*")
    | (?P<num>-?(?:\d+(?:\.\d+)?|\.\d+))
    | (?P<op>!=|<=|>=|=|<|>|\(|\)|,)
    | (?P<word>[A-Za-z_][A-Za-z0-9_.:-]*)
    | (?P<other>\S+)
    )""",
    re.VERBOSE,
)
_DENIABLE_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>'[^']*'|"[^"]*")
    | (?P<num>-?(?:\d+(?:\.\d+)?|\.\d+))(?![A-Za-z0-9_-])
    | (?P<op>==|!=|<=|>=|<|>|\(|\)|,)
    | (?P<word>[A-Za-z0-9_][A-Za-z0-9_-]*)
    | (?P<other>\S+)
    )""",
    re.VERBOSE,
)
_REF = re.compile(r"\$\{\s*([^}\s]+)\s*\}")
_OPS_XLSFORM = {"=": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_OPS_DENIABLE = {"==", "!=", "<", "<=", ">", ">="}


def _tokens(text: str, pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    found = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = pattern.match(text, position)
        if match is None or match.end() == position:
            break
        kind = match.lastgroup or "other"
        found.append((kind, match.group(kind)))
        position = match.end()
    return found


class _Parser:
    """Recursive descent over one dialect's tokens (`xlsform` or `deniable`)."""

    def __init__(self, text: str, dialect: str) -> None:
        if len(text) > MAX_CONDITION:
            raise ConditionError(f"at most {MAX_CONDITION} characters, got {len(text)}")
        pattern = _XLSFORM_TOKEN if dialect == "xlsform" else _DENIABLE_TOKEN
        self.tokens = _tokens(text, pattern)
        self.at = 0
        self.depth = 0
        self.xlsform = dialect == "xlsform"
        if not self.tokens:
            raise ConditionError("empty condition")

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        self.at += 1
        return token

    def expect(self, value: str) -> None:
        kind, got = self.take()
        if got != value or kind not in ("op", "word"):
            raise ConditionError(f"expected {value!r}, found {got or 'the end'!r}")

    def parse(self) -> Node:
        node = self.junction("or")
        kind, value = self.peek()
        if kind != "end":
            raise self.unsupported(kind, value)
        return node

    def unsupported(self, kind: str, value: str) -> ConditionError:
        if kind == "word" and self.xlsform:
            return ConditionError(
                f"{value!r} is not supported; deniable's skip logic takes {SUPPORTED}"
            )
        return ConditionError(f"unexpected {value!r}; deniable's skip logic takes {SUPPORTED}")

    def junction(self, word: str) -> Node:
        lower = self.junction("and") if word == "or" else self.negation()
        parts = [lower]
        while self.peek() == ("word", word):
            self.take()
            parts.append(self.junction("and") if word == "or" else self.negation())
        return parts[0] if len(parts) == 1 else Junction(word, tuple(parts))

    def nested(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ConditionError(f"nested more than {MAX_DEPTH} levels deep")
        try:
            self.expect("(")
            inner = self.junction("or")
            self.expect(")")
        finally:
            self.depth -= 1
        return inner

    def negation(self) -> Node:
        kind, value = self.peek()
        if (kind, value) == ("word", "not"):
            self.take()
            if self.xlsform:
                return Not(Group(self.nested()))
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise ConditionError(f"nested more than {MAX_DEPTH} levels deep")
            try:
                return Not(self.negation())
            finally:
                self.depth -= 1
        if (kind, value) == ("op", "("):
            return Group(self.nested())
        if self.xlsform and (kind, value) == ("word", "selected"):
            self.take()
            self.expect("(")
            ref = self.operand()
            self.expect(",")
            text = self.operand()
            self.expect(")")
            if not isinstance(ref, Ref) or not isinstance(text, Text):
                raise ConditionError("selected() takes a question and a choice's name in quotes")
            return Selected(ref.qid, text.value)
        return self.comparison()

    def operand(self) -> Operand:
        kind, value = self.take()
        if kind == "str":
            return Text(value[1:-1])
        if kind == "num":
            return Number(value)
        if self.xlsform and kind == "ref":
            match = _REF.fullmatch(value)
            if match is None:
                raise ConditionError(f"{value!r} names no question")
            return Ref(match.group(1))
        if not self.xlsform and kind == "word" and value not in ("and", "or", "not", "in"):
            return Ref(value)
        if kind == "end":
            raise ConditionError("the condition ends too early")
        raise self.unsupported(kind, value)

    def comparison(self) -> Node:
        left = self.operand()
        kind, value = self.take()
        if not self.xlsform and (kind, value) == ("word", "in"):
            if self.peek() == ("op", "("):
                self.take()
                values: list[Text | Number] = []
                while True:
                    item = self.operand()
                    if isinstance(item, Ref):
                        raise ConditionError("in (...) lists strings or numbers")
                    values.append(item)
                    if self.peek() == ("op", ","):
                        self.take()
                        continue
                    self.expect(")")
                    break
                return InList(left, tuple(values))
            right = self.operand()
            if not isinstance(left, Text) or not isinstance(right, Ref):
                raise ConditionError("'label' in q takes a string and a question")
            return Selected(right.qid, left.value)
        ops = _OPS_XLSFORM if self.xlsform else _OPS_DENIABLE
        if kind != "op" or value not in ops:
            if kind == "end":
                raise ConditionError("a comparison needs an operator and a second operand")
            raise self.unsupported(kind, value)
        op = _OPS_XLSFORM[value] if self.xlsform else value
        return Compare(op, left, self.operand())


def parse_xlsform(text: str) -> Node:
    """XLSForm's `relevant` text as a tree; ConditionError on anything deniable cannot honour."""
    return _Parser(text, "xlsform").parse()


def parse_deniable(text: str) -> Node:
    """A deniable condition as a tree (only to write it out again)."""
    return _Parser(text, "deniable").parse()


def referenced(node: Node) -> list[str]:
    """The question ids a tree names, in order of appearance."""
    if isinstance(node, Compare):
        return [o.qid for o in (node.left, node.right) if isinstance(o, Ref)]
    if isinstance(node, Selected):
        return [node.qid]
    if isinstance(node, InList):
        return [node.operand.qid] if isinstance(node.operand, Ref) else []
    if isinstance(node, Group | Not):
        return referenced(node.inner)
    return [qid for part in node.parts for qid in referenced(part)]


def _quote(value: str) -> str:
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise ConditionError(f"{value!r} holds both kinds of quote and cannot be written")


def _literal_of(operand: Operand, other: Operand, literal: Literal) -> Operand:
    if isinstance(operand, Text) and isinstance(other, Ref):
        return Text(literal(other.qid, operand.value))
    return operand


def _operand(operand: Operand, ref: Callable[[str], str]) -> str:
    if isinstance(operand, Ref):
        return ref(operand.qid)
    if isinstance(operand, Text):
        return _quote(operand.value)
    return operand.text


def to_deniable(node: Node, literal: Literal) -> str:
    """The tree in deniable's syntax, strings compared with a question mapped by `literal`."""
    if isinstance(node, Compare):
        left = _literal_of(node.left, node.right, literal)
        right = _literal_of(node.right, node.left, literal)
        return f"{_operand(left, str)} {node.op} {_operand(right, str)}"
    if isinstance(node, Selected):
        return f"{_quote(literal(node.qid, node.value))} in {node.qid}"
    if isinstance(node, InList):
        items = ", ".join(_operand(_literal_of(v, node.operand, literal), str) for v in node.values)
        return f"{_operand(node.operand, str)} in ({items})"
    if isinstance(node, Group):
        return f"({to_deniable(node.inner, literal)})"
    if isinstance(node, Not):
        return f"not {to_deniable(node.inner, literal)}"
    return f" {node.word} ".join(to_deniable(part, literal) for part in node.parts)


def _xref(qid: str) -> str:
    return "${" + qid + "}"


def to_xlsform(node: Node, literal: Literal) -> str:
    """The tree in XLSForm's syntax, strings compared with a question mapped by `literal`."""
    if isinstance(node, Compare):
        left = _literal_of(node.left, node.right, literal)
        right = _literal_of(node.right, node.left, literal)
        op = "=" if node.op == "==" else node.op
        return f"{_operand(left, _xref)} {op} {_operand(right, _xref)}"
    if isinstance(node, Selected):
        return f"selected({_xref(node.qid)}, {_quote(literal(node.qid, node.value))})"
    if isinstance(node, InList):
        alternatives = " or ".join(
            to_xlsform(Compare("==", node.operand, value), literal) for value in node.values
        )
        return f"({alternatives})"
    if isinstance(node, Group):
        return f"({to_xlsform(node.inner, literal)})"
    if isinstance(node, Not):
        inner = node.inner
        if isinstance(inner, Group):
            return f"not({to_xlsform(inner.inner, literal)})"
        return f"not({to_xlsform(inner, literal)})"
    return f" {node.word} ".join(to_xlsform(part, literal) for part in node.parts)


#: What a part of a condition reduces to once "was it answered" is known: a tree, or a truth.
Reduced = Node | bool


def _emptiness(node: Compare) -> tuple[str, bool] | None:
    """(question, whether it asks `answered`) for `${q} != ''` and `${q} = ''` (either way)."""
    if node.op not in ("==", "!="):
        return None
    for ref, other in ((node.left, node.right), (node.right, node.left)):
        if isinstance(ref, Ref) and isinstance(other, Text) and other.value == "":
            return ref.qid, node.op == "!="
    return None


def answered(node: Node, asked: Callable[[str], Node | None]) -> Reduced:
    """The tree with each `${q} != ''` (q was answered) replaced by the condition on which q
    is asked (`asked(q)`, None when q is always asked, so it is true) and each `${q} = ''` by
    its negation: deniable asks every question it shows, so an answer is empty exactly when its
    question was not asked. Parts that become true or false are simplified away."""
    if isinstance(node, Compare):
        found = _emptiness(node)
        if found is None:
            return node
        qid, wanted = found
        condition = asked(qid)
        if condition is None:
            return wanted
        grouped = condition if isinstance(condition, Group) else Group(condition)
        return grouped if wanted else Not(grouped)
    if isinstance(node, Group):
        inner = answered(node.inner, asked)
        return inner if isinstance(inner, bool) else Group(inner)
    if isinstance(node, Not):
        inner = answered(node.inner, asked)
        return (not inner) if isinstance(inner, bool) else Not(inner)
    if isinstance(node, Junction):
        decisive = node.word == "or"  # the truth that decides the whole junction
        parts: list[Node] = []
        for part in node.parts:
            reduced = answered(part, asked)
            if reduced is decisive:
                return decisive
            if not isinstance(reduced, bool):
                parts.append(reduced)
        if not parts:
            return not decisive
        return parts[0] if len(parts) == 1 else Junction(node.word, tuple(parts))
    return node


def renamed(tree: Node, names: dict[str, str]) -> Node:
    """The tree with each question renamed by `names` (`Fruits` -> `fruits`)."""
    if isinstance(tree, Compare):
        return Compare(
            tree.op, _renamed_operand(tree.left, names), _renamed_operand(tree.right, names)
        )
    if isinstance(tree, Selected):
        return Selected(names.get(tree.qid, tree.qid), tree.value)
    if isinstance(tree, InList):
        return InList(_renamed_operand(tree.operand, names), tree.values)
    if isinstance(tree, Group):
        return Group(renamed(tree.inner, names))
    if isinstance(tree, Not):
        return Not(renamed(tree.inner, names))
    return Junction(tree.word, tuple(renamed(p, names) for p in tree.parts))


def _renamed_operand(operand: Operand, names: dict[str, str]) -> Operand:
    if isinstance(operand, Ref):
        return Ref(names.get(operand.qid, operand.qid))
    return operand
