"""The rows of an XLSForm's survey sheet in their context, and what is wrong with each: the
model the importer (importing.py) decides on and the form's terms (terms.py) speak of."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deniable.aggregator.forms import relevance
from deniable.aggregator.forms.rows import Kind, Row

#: How "drop it" is said in a problem deniable could leave out.
DROP = "or drop the rows deniable cannot honour (--drop-unsupported) to leave it out"
#: How many items a notice names before it says how many more.
LIST_SHOWN = 8


def listed(items: list[str]) -> str:
    """Up to LIST_SHOWN items, then how many more."""
    shown = ", ".join(items[:LIST_SHOWN])
    more = len(items) - LIST_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


@dataclass
class Issue:
    """Something in a row deniable cannot honour (`droppable`: the row can be left out)."""

    row: Row
    message: str
    droppable: bool
    reason: str  # what cannot be honoured, without where or what to do


@dataclass
class Choice:
    """One row of the choices sheet: its row, its name and its labels by language tag."""

    number: int
    name: str
    labels: dict[str | None, str]


@dataclass
class Item:
    """One survey-sheet row in its context: its kind, the groups and repeat around it."""

    row: Row
    kind: Kind
    name: str | None
    groups: tuple[Item, ...]
    repeat: Item | None = None
    qid: str | None = None
    doc: dict[str, Any] = field(default_factory=dict)
    translated: dict[str, dict[str, Any]] = field(default_factory=dict)
    values: dict[str, str] | None = None  # a select's choice name -> deniable value
    issues: list[Issue] = field(default_factory=list)
    plain: bool = False
    list_row: int | None = None
    note_row: int | None = None
    dropped: bool = False
    tree: relevance.Node | None = None  # its condition (with its groups'), ids for names

    @property
    def where(self) -> str:
        return self.row.where(self.name)

    def issue(self, column: str | None, message: str) -> None:
        """Something to correct in the row before it can be kept."""
        at = f", column {column!r}" if column else ""
        self.issues.append(Issue(self.row, f"{self.where}{at}: {message}", False, message))

    def unsupported(self, column: str | None, reason: str, fix: str) -> None:
        """Something deniable cannot honour: the row can be left out (drop_unsupported)."""
        at = f", column {column!r}" if column else ""
        message = f"{self.where}{at}: {reason}; {fix}, {DROP}"
        self.issues.append(Issue(self.row, message, True, reason))
