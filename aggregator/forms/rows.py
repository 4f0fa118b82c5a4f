"""An XLSForm's rows as deniable reads them: each cell under what its column means, each row's
kind as pyxform names its type, and an integer's range from its constraint (docs/xlsform.md).

Text cells are kept as written (a label's quotes and spaces are the researcher's words, and a
form deniable writes must read back to the same survey); expressions (`relevant`,
`constraint`) are cleaned of "smart" quotes as pyxform cleans them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from deniable.aggregator.forms.columns import TRANSLATED, Column
from deniable.aggregator.forms.languages import Languages

#: Metadata types beyond those pyxform preloads (jr:preload) or records as actions.
_MORE_METADATA = frozenset({"audit", "background-geopoint"})
#: Spellings of the select types, longest first, and what they ask.
_SELECTS = (
    ("select all that apply from", "MANY"),
    ("select multiple from", "MANY"),
    ("select all that apply", "MANY"),
    ("select_multiple", "MANY"),
    ("select one from", "ONE"),
    ("select_one", "ONE"),
    ("select one", "one"),
    ("select1", "one"),
)
#: Select types whose choices come from elsewhere than the choices sheet.
_OTHER_SELECTS = (
    "select_one_from_file",
    "select_multiple_from_file",
    "select one from file",
    "select multiple from file",
    "select_one_external",
    "select one external",
    "select_multiple_external",
    "rank",
)
OR_OTHER = ("or_other", "or specify other")
GROUP_BEGIN = frozenset({"begin group", "begin_group"})
GROUP_END = frozenset({"end group", "end_group"})
REPEAT_BEGIN = frozenset({"begin repeat", "begin_repeat", "begin loop", "begin_loop"})
REPEAT_END = frozenset({"end repeat", "end_repeat", "end loop", "end_loop"})
#: Expression columns, cleaned as pyxform cleans them.
EXPRESSIONS = frozenset({"relevant", "constraint"})
_BOUND = re.compile(
    r"\s*(?P<left>\.|\$\{\s*[^}\s]+\s*\}|-?[0-9]{1,12})\s*(?P<op><=|>=|<|>)\s*"
    r"(?P<right>\.|\$\{\s*[^}\s]+\s*\}|-?[0-9]{1,12})\s*"
)
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


@functools.cache
def _type_table() -> Mapping[str, dict[str, object]]:
    from pyxform.question_type_dictionary import QUESTION_TYPE_DICT

    return {k.lower(): v for k, v in QUESTION_TYPE_DICT.items()}


def _bind(kind: str) -> Mapping[str, object]:
    entry = _type_table().get(kind, {})
    bind = entry.get("bind")
    return bind if isinstance(bind, Mapping) else {}


def is_metadata(kind: str) -> bool:
    """Whether a type is one of ODK's metadata about the respondent or device (start, end,
    deviceid, phonenumber, username...): pyxform preloads them or records them as actions."""
    entry = _type_table().get(kind)
    if entry is None:
        return False
    control = entry.get("control")
    action = isinstance(control, Mapping) and control.get("tag") == "action"
    return bool(_bind(kind).get("jr:preload")) or action or kind in _MORE_METADATA


class Asks(Enum):
    """What an XLSForm question row asks, in XLSForm's own terms (not deniable's question types:
    a select_one becomes binary or categorical from its list)."""

    ONE = "a choice from a list"
    MANY = "any choices from a list"
    WHOLE_NUMBER = "a whole number"
    WORDS = "an answer in words"

    @property
    def chooses(self) -> bool:
        """A select row: its options come from a list of the choices sheet."""
        return self in (Asks.ONE, Asks.MANY)


@dataclass(frozen=True)
class Kind:
    """What a row's type asks: `what` is one of question, note, group, end-group, repeat,
    end-repeat, metadata, other; a question's `asks`, `list_name` and `or_other` a select's,
    `bounds` an integer's built-in range."""

    what: str
    asks: Asks | None = None
    list_name: str | None = None
    or_other: bool = False
    bounds: tuple[int | None, int | None] = (None, None)


def kind_of(type_text: str) -> Kind:
    """The kind of a row from its type cell, as pyxform spells types (any case, any spaces)."""
    kind = " ".join(type_text.split()).lower()
    if kind in GROUP_BEGIN:
        return Kind("group")
    if kind in GROUP_END:
        return Kind("end-group")
    if kind in REPEAT_BEGIN:
        return Kind("repeat")
    if kind in REPEAT_END:
        return Kind("end-repeat")
    if any(kind == s or kind.startswith(s + " ") for s in _OTHER_SELECTS):
        return Kind("other")
    for prefix, asks in _SELECTS:
        if kind.startswith(prefix + " "):
            rest = type_text.split()[len(prefix.split()) :]
            tail = " ".join(rest[1:]).lower()
            if not rest or (tail and tail not in OR_OTHER):
                return Kind("other")
            return Kind(
                "question",
                Asks[asks],
                list_name=rest[0],
                or_other=bool(tail),
            )
    if kind in ("note", "q note", "add note prompt"):
        return Kind("note")
    if is_metadata(kind):
        return Kind("metadata")
    bind = _bind(kind)
    entry = _type_table().get(kind, {})
    control = entry.get("control")
    typed = isinstance(control, Mapping) and control.get("tag") == "input"
    if typed and bind.get("type") == "int":
        constraint = bind.get("constraint")
        bounds = parse_range(constraint) if isinstance(constraint, str) else None
        return Kind("question", Asks.WHOLE_NUMBER, bounds=bounds or (None, None))
    if typed and bind.get("type") == "string" and "constraint" not in bind and kind != "note":
        return Kind("question", Asks.WORDS)
    return Kind("other")


def parse_range(text: str, name: str | None = None) -> tuple[int | None, int | None] | None:
    """(min, max) of an integer's constraint: `. >= a and . <= b` in either order, with `.`
    or `${name}`, `<`/`>` as the next whole number, either bound alone (the other None); None
    when the constraint says anything else."""
    low: int | None = None
    high: int | None = None
    parts = re.split(r"\s+and\s+", text.strip())
    if not parts or len(parts) > 2:
        return None
    for part in parts:
        match = _BOUND.fullmatch(part)
        if match is None:
            return None
        left, op, right = match.group("left"), match.group("op"), match.group("right")
        if _is_self(right, name) and not _is_self(left, name):
            left, op, right = right, _FLIP[op], left
        if not _is_self(left, name) or _is_self(right, name) or right.startswith("$"):
            return None
        value = int(right)
        if op in (">", ">="):
            bound = value + 1 if op == ">" else value
            if low is not None:
                return None
            low = bound
        else:
            bound = value - 1 if op == "<" else value
            if high is not None:
                return None
            high = bound
    return low, high


def _is_self(operand: str, name: str | None) -> bool:
    if operand == ".":
        return True
    inner = operand[2:-1].strip() if operand.startswith("${") else None
    return inner is not None and name is not None and inner == name


@dataclass
class Row:
    """One row's cells by (key, language tag) as deniable reads them (the tag is None for a
    column with no language, or the default language's tag for a translated one), and the
    header each came from, to name the column as the form writes it."""

    sheet: str
    number: int
    cells: dict[tuple[str, str | None], str] = field(default_factory=dict)
    headers: dict[tuple[str, str | None], str] = field(default_factory=dict)

    def get(self, key: str, tag: str | None = None) -> str | None:
        return self.cells.get((key, tag))

    def header(self, key: str, tag: str | None = None) -> str:
        """The column of a cell as the form writes it (the key when the form has none)."""
        return self.headers.get((key, tag), key)

    def texts(self, key: str) -> dict[str | None, str]:
        """A translated key's cells by language tag."""
        return {tag: text for (k, tag), text in self.cells.items() if k == key}

    def where(self, name: str | None = None) -> str:
        """`survey sheet, row 7 (name)`."""
        named = f" ({name})" if name else ""
        return f"{self.sheet} sheet, row {self.number}{named}"


def read_row(
    sheet: str,
    number: int,
    raw: Mapping[str, str],
    columns: Mapping[str, Column],
    languages: Languages,
    *,
    clean_spaces: bool,
) -> Row:
    """A sheet's row (header -> text, as the workbook reader gives it) as a Row."""
    from pyxform.parsing.sheet_headers import clean_text_values

    row = Row(sheet, number)
    for header, value in raw.items():
        column = columns.get(header)
        if column is None:
            continue
        text = value.replace("\r\n", "\n").replace("\r", "\n")
        if column.key in EXPRESSIONS or column.key == "type":
            text = clean_text_values(text, strip_whitespace=clean_spaces)
        if column.key in TRANSLATED.get(sheet, ()):
            tag = languages.tag(column.language)
            if column.language is not None and tag is None:
                continue  # a language that has no tag: said once, for its column
            where = (column.key, tag)
        else:
            where = (column.key, column.language)
        if where in row.cells:
            continue  # two columns for one thing: said once, for the sheet's header
        row.cells[where] = text
        row.headers[where] = header
    return row
