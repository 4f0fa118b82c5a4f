"""Skip logic between XLSForm's `relevant` syntax and deniable's conditions (docs/xlsform.md).

XLSForm's `${q}`, strings, numbers, `=`, `!=`, `<`, `<=`, `>`, `>=`, `selected(${q}, 'name')`,
`and`, `or`, `not(...)` and parentheses are parsed here into deniable's own condition tree
(deniable.shared.conditions, which reads deniable's grammar and bounds both), never evaluated.
A choice's name in XLSForm is its label in deniable, so every string compared with a question
goes through `literal`, which maps it (name -> label on import, label -> name on export).
The tree keeps parentheses and numbers as written, so a condition imported, exported and
imported again is the same text (the survey keeps its hash). `answered` turns ODK's "was it
answered" (`${q} != ''`) into "was it asked" (q's own condition), and `renamed` names questions
by their ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from deniable.shared import conditions
from deniable.shared.conditions import (
    MAX_CONDITION,
    MAX_DEPTH,
    All,
    Any_,
    Compare,
    Group,
    Lit,
    Node,
    Not,
    OneOf,
    Operand,
    Ref,
    Selected,
)

#: (question id, string compared with it) -> the string in the other syntax.
Literal = Callable[[str, str], str]
#: What a part of a condition reduces to once "was it answered" is known: a tree, or a truth.
Reduced = Node | bool

SUPPORTED = (
    "${q}, strings, numbers, =, !=, <, <=, >, >=, selected(${q}, 'name'), and, or, not(...) "
    "and parentheses"
)


class ConditionError(ValueError):
    """A condition that cannot be translated; the message says what and what to write."""


_TOKEN = re.compile(
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
_REF = re.compile(r"\$\{\s*([^}\s]+)\s*\}")
_OPS = {"=": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _tokens(text: str) -> list[tuple[str, str]]:
    found = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            break
        kind = match.lastgroup or "other"
        found.append((kind, match.group(kind)))
        position = match.end()
    return found


def _number(written: str) -> Lit:
    """An XLSForm number as deniable writes it (`.5` becomes `0.5`, digits bounded)."""
    sign, digits = ("-", written[1:]) if written.startswith("-") else ("", written)
    try:
        return conditions.number(sign + ("0" + digits if digits.startswith(".") else digits))
    except conditions.ConditionError as exc:
        raise ConditionError(str(exc)) from None


class _Parser:
    """Recursive descent over XLSForm's tokens, to deniable's tree."""

    def __init__(self, text: str) -> None:
        if len(text) > MAX_CONDITION:
            raise ConditionError(f"at most {MAX_CONDITION} characters, got {len(text)}")
        self.tokens = _tokens(text)
        self.at = 0
        self.depth = 0
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
        node = self.disjunction()
        kind, value = self.peek()
        if kind != "end":
            raise self.unsupported(kind, value)
        return node

    def unsupported(self, kind: str, value: str) -> ConditionError:
        if kind == "word":
            return ConditionError(
                f"{value!r} is not supported; deniable's skip logic takes {SUPPORTED}"
            )
        return ConditionError(f"unexpected {value!r}; deniable's skip logic takes {SUPPORTED}")

    def disjunction(self) -> Node:
        parts = [self.conjunction()]
        while self.peek() == ("word", "or"):
            self.take()
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else Any_(tuple(parts))

    def conjunction(self) -> Node:
        parts = [self.negation()]
        while self.peek() == ("word", "and"):
            self.take()
            parts.append(self.negation())
        return parts[0] if len(parts) == 1 else All(tuple(parts))

    def nested(self) -> Group:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ConditionError(f"nested more than {MAX_DEPTH} levels deep")
        try:
            self.expect("(")
            inner = self.disjunction()
            self.expect(")")
        finally:
            self.depth -= 1
        return Group(inner)

    def negation(self) -> Node:
        kind, value = self.peek()
        if (kind, value) == ("word", "not"):
            self.take()
            return Not(self.nested())
        if (kind, value) == ("op", "("):
            return self.nested()
        if (kind, value) == ("word", "selected"):
            self.take()
            self.expect("(")
            ref = self.operand()
            self.expect(",")
            text = self.operand()
            self.expect(")")
            if (
                not isinstance(ref, Ref)
                or not isinstance(text, Lit)
                or not isinstance(text.value, str)
            ):
                raise ConditionError("selected() takes a question and a choice's name in quotes")
            return Selected(text, ref)
        return self.comparison()

    def operand(self) -> Operand:
        kind, value = self.take()
        if kind == "str":
            return Lit(value[1:-1])
        if kind == "num":
            return _number(value)
        if kind == "ref":
            match = _REF.fullmatch(value)
            if match is None:
                raise ConditionError(f"{value!r} names no question")
            return Ref(match.group(1))
        if kind == "end":
            raise ConditionError("the condition ends too early")
        raise self.unsupported(kind, value)

    def comparison(self) -> Node:
        left = self.operand()
        kind, value = self.take()
        if kind != "op" or value not in _OPS:
            if kind == "end":
                raise ConditionError("a comparison needs an operator and a second operand")
            raise self.unsupported(kind, value)
        return Compare(_OPS[value], left, self.operand())


def parse_xlsform(text: str) -> Node:
    """XLSForm's `relevant` text as a tree; ConditionError on anything deniable cannot honour."""
    return _Parser(text).parse()


def referenced(node: Node) -> list[str]:
    """The question ids a tree names, in order of appearance."""
    return [ref.qid for ref in conditions.refs(node)]


def _quote(value: str) -> str:
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise ConditionError(f"{value!r} holds both kinds of quote and cannot be written")


def _literal_of(operand: Operand, other: Operand, literal: Literal) -> Operand:
    if isinstance(operand, Lit) and isinstance(operand.value, str) and isinstance(other, Ref):
        return Lit(literal(other.qid, operand.value))
    return operand


def _operand(operand: Operand, ref: Callable[[str], str]) -> str:
    if isinstance(operand, Ref):
        return ref(operand.qid)
    if isinstance(operand.value, str):
        return _quote(operand.value)
    return operand.written or str(operand.value)


def to_deniable(node: Node, literal: Literal) -> str:
    """The tree in deniable's syntax, strings compared with a question mapped by `literal`."""
    if isinstance(node, Compare):
        left = _literal_of(node.left, node.right, literal)
        right = _literal_of(node.right, node.left, literal)
        return f"{_operand(left, str)} {node.op} {_operand(right, str)}"
    if isinstance(node, Selected):
        label = _literal_of(node.literal, node.question, literal)
        return f"{_operand(label, str)} in {node.question.qid}"
    if isinstance(node, OneOf):
        items = ", ".join(
            _operand(_literal_of(v, node.operand, literal), str) for v in node.literals
        )
        return f"{_operand(node.operand, str)} in ({items})"
    if isinstance(node, Group):
        return f"({to_deniable(node.item, literal)})"
    if isinstance(node, Not):
        return f"not {to_deniable(node.item, literal)}"
    word = " and " if isinstance(node, All) else " or "
    return word.join(to_deniable(part, literal) for part in node.items)


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
        name = _literal_of(node.literal, node.question, literal)
        return f"selected({_xref(node.question.qid)}, {_operand(name, _xref)})"
    if isinstance(node, OneOf):
        alternatives = " or ".join(
            to_xlsform(Compare("==", node.operand, value), literal) for value in node.literals
        )
        return f"({alternatives})"
    if isinstance(node, Group):
        return f"({to_xlsform(node.item, literal)})"
    if isinstance(node, Not):
        inner = node.item.item if isinstance(node.item, Group) else node.item
        return f"not({to_xlsform(inner, literal)})"
    word = " and " if isinstance(node, All) else " or "
    return word.join(to_xlsform(part, literal) for part in node.items)


def conjoined(nodes: list[Node]) -> Node:
    """Conditions that must all hold (a question's groups' and its own), each in parentheses."""
    if len(nodes) == 1:
        return nodes[0]
    return All(tuple(n if isinstance(n, Group) else Group(n) for n in nodes))


def _emptiness(node: Compare) -> tuple[str, bool] | None:
    """(question, whether it asks `answered`) for `${q} != ''` and `${q} = ''` (either way)."""
    if node.op not in ("==", "!="):
        return None
    for ref, other in ((node.left, node.right), (node.right, node.left)):
        if isinstance(ref, Ref) and isinstance(other, Lit) and other.value == "":
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
        inner = answered(node.item, asked)
        return inner if isinstance(inner, bool) else Group(inner)
    if isinstance(node, Not):
        inner = answered(node.item, asked)
        return (not inner) if isinstance(inner, bool) else Not(inner)
    if isinstance(node, All | Any_):
        decisive = isinstance(node, Any_)  # the truth that decides the whole junction
        parts: list[Node] = []
        for part in node.items:
            reduced = answered(part, asked)
            if reduced is decisive:
                return decisive
            if not isinstance(reduced, bool):
                parts.append(reduced)
        if not parts:
            return not decisive
        return parts[0] if len(parts) == 1 else type(node)(tuple(parts))
    return node


def renamed(tree: Node, names: dict[str, str]) -> Node:
    """The tree with each question renamed by `names` (`Fruits` -> `fruits`)."""
    if isinstance(tree, Compare):
        return Compare(
            tree.op, _renamed_operand(tree.left, names), _renamed_operand(tree.right, names)
        )
    if isinstance(tree, Selected):
        return Selected(tree.literal, Ref(names.get(tree.question.qid, tree.question.qid)))
    if isinstance(tree, OneOf):
        return OneOf(_renamed_operand(tree.operand, names), tree.literals)
    if isinstance(tree, Group):
        return Group(renamed(tree.item, names))
    if isinstance(tree, Not):
        return Not(renamed(tree.item, names))
    return type(tree)(tuple(renamed(p, names) for p in tree.items))


def _renamed_operand(operand: Operand, names: dict[str, str]) -> Operand:
    if isinstance(operand, Ref):
        return Ref(names.get(operand.qid, operand.qid))
    return operand
