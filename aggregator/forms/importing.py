"""An XLSForm as researchers already have it, turned into a survey document (docs/xlsform.md).

Everything that changes what a respondent is asked is kept or refused, and everything else is
said plainly: columns that only change how ODK shows or checks a form are ignored with one
notice each, metadata rows (start, deviceid, phonenumber...) are dropped with a notice saying
why, groups are flattened, ids are made ids with a notice. Every problem is found in one run,
one line each naming the sheet, row and column and what to do; with `drop_unsupported`, rows
deniable cannot honour are left out, each named in a notice, unless something kept depends on
them. The document is then checked by `Survey.from_dict`, whose errors are said again in the
form's terms.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from deniable.aggregator.forms import relevance
from deniable.aggregator.forms.columns import DISPLAY, HONOURED, UNHONOURED, Column, read_columns
from deniable.aggregator.forms.items import DROP, Choice, Item, listed
from deniable.aggregator.forms.languages import Languages, column_name, find_languages
from deniable.aggregator.forms.rows import Asks, Row, kind_of, parse_range, read_row
from deniable.aggregator.forms.terms import in_form_terms
from deniable.aggregator.forms.workbook import Book, XLSFormError, check_with_pyxform, read_book
from deniable.shared import mechanisms as mech
from deniable.shared.canonical import JSONTextError, parse_json
from deniable.shared.errors import SurveyError
from deniable.shared.questions import MAX_OPTIONS, MAX_PLAIN_VALUES, SKETCH_DEFAULTS
from deniable.shared.survey import QUESTION_ID, SURVEY_ID, Question, Survey

#: Mechanism parameters a row may give as `deniable::<name>` columns.
PARAMETERS = sorted(
    {p for names in mech.PARAMETERS.values() for p in names}
    | {"k", "m", "keep", "h", "f", "p", "q"}
    | {p for defaults in SKETCH_DEFAULTS.values() for p in defaults}
)
#: Sketch parameters that are whole numbers (the others are probabilities, kept as text).
WHOLE_PARAMETERS = {"k", "m", "h"}
ROW_PRIVACY = ("deniable::mechanism", "deniable::epsilon")
OWN_ROW_COLUMNS = {
    *ROW_PRIVACY,
    "deniable::candidates",
    *(f"deniable::{p}" for p in PARAMETERS),
}
OWN_SETTINGS = {
    "deniable::epsilon",
    "deniable::description",
    "deniable::enrollment",
    "deniable::closes_at",
    "deniable::device",
    "deniable::design",
}
NOTE_SEPARATOR = "\n\n"
#: The range of a plain integer whose form gives none: the most values a plain integer holds.
DEFAULT_RANGE = (0, MAX_PLAIN_VALUES - 1)
_PIPED = re.compile(r"\$\{\s*([^}\s]+)\s*\}")
_YES = {"yes", "true", "true()", "1"}
_WHOLE = re.compile(r"[0-9]{1,12}")
_TEXT_ORDER = ("text", "options", "hint", "note")
_SHEET_ORDER = {"settings": 0, "choices": 1, "survey": 2}


@dataclass
class ImportedForm:
    """A form's survey document and what the import left out or changed (one line each)."""

    document: dict[str, Any]
    notices: list[str]


class _Importer:
    """Reads the book into items, decides what is kept, and writes the survey document."""

    def __init__(self, book: Book, fallback_id: str, drop_unsupported: bool) -> None:
        self.book = book
        self.fallback_id = fallback_id
        self.drop = drop_unsupported
        self.problems: list[tuple[int, int, str]] = []
        self.notices: list[str] = []
        self.columns = {
            name: read_columns(name, book.sheet(name).headers)
            for name in ("survey", "choices", "settings")
        }
        self.by_header = {
            name: {c.header: c for c in found} for name, found in self.columns.items()
        }
        self.languages = self.read_languages()
        self.settings = self.read_settings()
        clean = (self.settings.get("clean_text_values") or "yes").strip().lower()
        self.clean_spaces = clean not in ("no", "false", "false()")
        self.lists = self.read_choices()
        self.items: list[Item] = []
        self.privacy_given = False
        self._ignored_rows: dict[str, list[Item]] = {}
        self._ranged: list[str] = []
        self._missing: dict[str, dict[str, list[int]]] = {}
        self._lone_hints: dict[str, list[str]] = {}
        self._default_epsilon: float | None = None
        self._depended: set[int] = set()  # rows left out that a kept row's condition names

    # -- what is said ---------------------------------------------------------------------------
    def problem(self, sheet: str, row: int, text: str) -> None:
        self.problems.append((_SHEET_ORDER.get(sheet, 3), row, text))

    def notice(self, text: str) -> None:
        if text not in self.notices:
            self.notices.append(text)

    @property
    def default(self) -> str | None:
        return self.languages.default

    def header_of(self, sheet: str, key: str, tag: str | None) -> str:
        """The header of a sheet's column in a language, as the form writes it."""
        for column in self.columns[sheet]:
            if column.key == key and self.languages.tag(column.language) == tag:
                return column.header
        return column_name(key, tag)

    # -- settings, languages and choices --------------------------------------------------------
    def _settings_row(self) -> tuple[int, dict[str, str]]:
        """(row number, cells) of the settings sheet's one row (ODK reads the first)."""
        rows = self.book.sheet("settings").numbered()
        return rows[0] if rows else (2, {})

    def read_languages(self) -> Languages:
        number, raw = self._settings_row()
        columns = self.by_header["settings"]
        setting = next(
            (v for h, v in raw.items() if h in columns and columns[h].key == "default_language"),
            None,
        )
        languages = find_languages(self.columns, setting, number)
        for problem in languages.problems:
            self.problem(problem.split(" ", 1)[0], 1, problem)
        return languages

    def read_settings(self) -> Row:
        number, raw = self._settings_row()
        row = read_row(
            "settings", number, raw, self.by_header["settings"], self.languages, clean_spaces=False
        )
        self.settings = row
        self.check_settings_columns()
        return row

    def check_settings_columns(self) -> None:
        ignored = []
        filled = set(self.settings.headers.values())
        for column in self.columns["settings"]:
            if column.header not in filled or column.key in HONOURED["settings"]:
                continue
            if column.key.startswith("deniable::"):
                if column.key not in OWN_SETTINGS:
                    self.problem(
                        "settings",
                        self.settings.number,
                        f"settings sheet, column {column.header!r}: not a deniable setting; "
                        f"deniable's are {', '.join(sorted(OWN_SETTINGS))}",
                    )
                continue
            if column.key == "add_none_option" and (
                (self.settings.get("add_none_option") or "").strip().lower() in _YES
            ):
                self.problem(
                    "settings",
                    self.settings.number,
                    "settings sheet, column 'add_none_option': ODK adds a choice None to every "
                    "select_multiple; deniable cannot honour it: add the choice to the lists "
                    "instead, and empty the cell",
                )
                continue
            ignored.append(column.header)
        if ignored:
            self.notice(
                f"settings sheet: ignored {listed([repr(h) for h in ignored])}: they only "
                "change how ODK shows, names or sends the form"
            )

    def read_choices(self) -> dict[str, list[Choice]]:
        sheet = self.book.sheet("choices")
        columns = self.by_header["choices"]
        lists: dict[str, list[Choice]] = {}
        for number, raw in sheet.numbered():
            row = read_row("choices", number, raw, columns, self.languages, clean_spaces=False)
            list_name = row.get("list_name")
            name = row.get("name")
            if not list_name or not name:
                if list_name or name:
                    missing = "list_name" if not list_name else "name"
                    self.problem(
                        "choices",
                        number,
                        f"choices sheet, row {number}: {missing} is empty; fill it",
                    )
                continue
            lists.setdefault(list_name, []).append(Choice(number, name, row.texts("label")))
        return lists

    # -- the survey sheet -----------------------------------------------------------------------
    def read_items(self) -> None:
        sheet = self.book.sheet("survey")
        if not sheet.headers:
            self.problem("survey", 1, "survey sheet: missing or empty; an XLSForm needs one")
            return
        if not any(c.key == "type" for c in self.columns["survey"]):
            self.problem("survey", 1, "survey sheet: no column 'type'; add it (docs/xlsform.md)")
            return
        columns = self.by_header["survey"]
        stack: list[Item] = []
        for number, raw in sheet.numbered():
            row = read_row(
                "survey", number, raw, columns, self.languages, clean_spaces=self.clean_spaces
            )
            type_text = row.get("type") or ""
            if not type_text.strip():
                if row.get("name") or row.texts("label"):
                    self.problem(
                        "survey", number, f"survey sheet, row {number}: no type; give it one"
                    )
                continue  # a comment row, as pyxform reads it
            kind = kind_of(type_text)
            groups = tuple(i for i in stack if i.kind.what == "group")
            repeat = next((i for i in stack if i.kind.what == "repeat"), None)
            item = Item(row, kind, row.get("name"), groups, repeat)
            self.items.append(item)
            if kind.what in ("group", "repeat"):
                stack.append(item)
            elif kind.what in ("end-group", "end-repeat"):
                wanted = "group" if kind.what == "end-group" else "repeat"
                while stack:
                    if stack.pop().kind.what == wanted:
                        break

    def check_items(self) -> None:
        """Each item's own issues, and the question document of each question."""
        names: dict[str, Item] = {}
        renamed: list[str] = []
        for item in self.items:
            what = item.kind.what
            if item.repeat is not None or what in ("repeat", "end-repeat"):
                continue
            if what == "metadata":
                continue
            if what == "other":
                item.unsupported(
                    item.row.header("type"),
                    f"deniable cannot honour {' '.join((item.row.get('type') or '').split())!r} "
                    "(its questions are select_one, select_multiple, integer and text, and "
                    "note rows)",
                    "remove the row",
                )
                continue
            if what == "note":
                self.check_note(item)
                continue
            if what == "group":
                self.check_piping(item, ("label",))
                continue
            if what != "question":
                continue
            self.check_question(item)
            if item.qid is not None:
                if item.qid in names and not names[item.qid].dropped:
                    other = names[item.qid]
                    item.issue(
                        item.row.header("name"),
                        f"{item.name!r} is also the name of row {other.row.number} "
                        f"({other.name}) once lower-cased; give each question its own name",
                    )
                else:
                    names[item.qid] = item
                    if item.qid != item.name:
                        renamed.append(f"{item.name} → {item.qid} (row {item.row.number})")
        if renamed:
            self.notice(f"survey sheet: question names made ids (lower case): {listed(renamed)}")

    def check_piping(self, item: Item, keys: Iterable[str]) -> None:
        for key in keys:
            for tag, text in item.row.texts(key).items():
                found = _PIPED.search(text)
                if found:
                    item.unsupported(
                        item.row.header(key, tag),
                        f"its text shows the answer to ${{{found.group(1)}}}, and deniable shows "
                        "text as written",
                        "write the text without it",
                    )
                    return

    def check_note(self, item: Item) -> None:
        row = item.row
        if row.get("relevant"):
            item.unsupported(
                row.header("relevant"),
                "a note is shown with the question after it, so it cannot have its own condition",
                "put the condition on that question",
            )
        if row.get("calculation"):
            item.unsupported(
                row.header("calculation"),
                "a note showing a calculated value cannot be honoured",
                "empty the cell",
            )
        if not row.texts("label"):
            item.unsupported(
                None,
                "a note with no text (ODK may show its media) shows nothing here",
                "give it a label",
            )
        elif row.get("label", self.default) is None:
            item.issue(
                self.header_of("survey", "label", self.default),
                "the note has no text in the default language; give it one",
            )
        self.check_piping(item, ("label",))

    def check_question(self, item: Item) -> None:
        row = item.row
        name = item.name
        if not name:
            item.issue(None, "no name; give the question a name")
        else:
            qid = name.strip().lower()
            if not QUESTION_ID.fullmatch(qid):
                item.issue(
                    row.header("name"),
                    f"{name!r} cannot be a question id; use 1-64 of letters, digits, '-' and "
                    "'_', starting with a letter or digit",
                )
            else:
                item.qid = qid
        text = row.get("label", self.default)
        if not text and row.texts("label"):
            item.issue(
                self.header_of("survey", "label", self.default),
                "missing; every question needs its text in the default language",
            )
        elif not text:
            item.unsupported(
                self.header_of("survey", "label", self.default),
                "a question with no text cannot be asked",
                "give it a label",
            )
        doc: dict[str, Any] = {"id": item.qid or name or "", "text": text or ""}
        self.check_piping(item, ("label", "hint"))
        self.check_cells(item)
        self.privacy(item, doc)
        kind = item.kind
        if kind.asks is not None and kind.asks.chooses:
            self.choice_question(item, doc)
        elif kind.asks is Asks.WHOLE_NUMBER:
            self.integer_question(item, doc)
        else:
            doc["type"] = "text"
            if mech.names_plain(doc.get("mechanism")):
                item.issue(
                    row.header("deniable::mechanism"),
                    "a text answer is always randomized (a sketch: hcms, cms or rappor); give "
                    "one of them, or leave the cell empty",
                )
                doc.pop("mechanism")
        if kind.asks is not Asks.WHOLE_NUMBER and row.get("constraint"):
            self.ignored(row, "constraint", item)
        hint = row.get("hint", self.default)
        if hint is not None:
            doc["hint"] = hint
        for tag, value in row.texts("label").items():
            if tag is not None and tag != self.default:
                item.translated.setdefault(tag, {})["text"] = value
        for tag, value in row.texts("hint").items():
            if tag is not None and tag != self.default:
                item.translated.setdefault(tag, {})["hint"] = value
        item.doc = doc

    def check_cells(self, item: Item) -> None:
        """Cells deniable ignores on a kept question, and cells it cannot honour there."""
        row = item.row
        for (key, _), value in row.cells.items():
            if key in ("calculation", "trigger") and value.strip():
                item.unsupported(
                    row.header(key),
                    f"deniable cannot honour it on a question ({UNHONOURED[key]})",
                    "empty the cell",
                )
            elif key == "required" and value.strip().lower() not in _YES:
                self.ignored(row, key, item)
        mechanism = (row.get("deniable::mechanism") or "").strip()
        item.plain = mech.names_plain(mechanism)
        for key in ("default", "choice_filter"):
            if row.get(key):
                if item.plain:
                    self.ignored(row, key, item)
                else:
                    item.unsupported(
                        row.header(key),
                        f"deniable cannot honour it on a randomized question ({UNHONOURED[key]})",
                        "empty the cell, ask the question plainly (deniable::mechanism none)",
                    )

    def ignored(self, row: Row, key: str, item: Item) -> None:
        """Note a display-only cell of a row for its column's one notice."""
        self._ignored_rows.setdefault(row.header(key), []).append(item)

    def privacy(self, item: Item, doc: dict[str, Any]) -> None:
        row = item.row
        mechanism = row.get("deniable::mechanism")
        if mechanism is not None and mechanism.strip():
            doc["mechanism"] = mechanism.strip()
        epsilon = row.get("deniable::epsilon")
        if epsilon is not None:
            try:
                doc["epsilon"] = float(epsilon)
            except ValueError:
                item.issue(row.header("deniable::epsilon"), f"expected a number, got {epsilon!r}")
        params = {
            key.removeprefix("deniable::"): value
            for (key, _), value in row.cells.items()
            if key.startswith("deniable::") and key.removeprefix("deniable::") in PARAMETERS
        }
        for (key, _), _value in row.cells.items():
            if key.startswith("deniable::") and key not in OWN_ROW_COLUMNS:
                item.issue(
                    row.header(key),
                    "not a deniable column; docs/xlsform.md lists them (deniable::mechanism, "
                    "deniable::epsilon, deniable::candidates and the mechanisms' parameters)",
                )
        if params:
            if mechanism is None or not mechanism.strip():
                first = sorted(params)[0]
                item.issue(
                    row.header(f"deniable::{first}"),
                    "a mechanism's parameter needs the mechanism; fill deniable::mechanism",
                )
            else:
                doc[mechanism.strip()] = {
                    key: int(value)
                    if key in WHOLE_PARAMETERS and _WHOLE.fullmatch(value)
                    else value
                    for key, value in sorted(params.items())
                }
        default = self.default_epsilon
        randomized = not mech.names_plain(doc.get("mechanism"))
        if default is not None and randomized and "epsilon" not in doc and not params:
            doc["epsilon"] = default
        candidates = row.get("deniable::candidates")
        if candidates is not None:
            if item.kind.asks is not Asks.WORDS:
                item.issue(
                    row.header("deniable::candidates"),
                    "only a text question has candidates; empty the cell",
                )
            else:
                doc["candidates"] = [
                    line.strip() for line in candidates.splitlines() if line.strip()
                ]

    def choice_question(self, item: Item, doc: dict[str, Any]) -> None:
        row = item.row
        kind = item.kind
        assert kind.list_name is not None
        choices = self.lists.get(kind.list_name)
        if not choices:
            item.issue(
                row.header("type"), f"the choices sheet has no list {kind.list_name!r}; add it"
            )
            doc["type"] = "categorical"
            return
        item.list_row = choices[0].number
        names = [c.name for c in choices]
        if not 2 <= len(choices) + kind.or_other <= MAX_OPTIONS:
            item.unsupported(
                row.header("type"),
                f"the list {kind.list_name!r} has {len(choices)} choices, and a deniable "
                f"question has 2 to {MAX_OPTIONS} options",
                "give the list its choices",
            )
            doc["type"] = "categorical"
            return
        many = kind.asks is Asks.MANY
        if kind.or_other:
            if "other" in names:
                item.issue(
                    row.header("type"),
                    f"or_other adds a choice 'other', and the list {kind.list_name!r} has one",
                )
            else:
                labels = dict.fromkeys([None, self.default, *self.languages.others], "Other")
                choices = [*choices, Choice(choices[-1].number, "other", labels)]
                names.append("other")
                self.notice(
                    f"{item.where}, column {row.header('type')!r}: or_other adds the option "
                    "'Other'; the text ODK asks after it is not asked (deniable sends only "
                    "the option)"
                )
        if not many and sorted(names) == ["no", "yes"]:
            doc["type"] = "binary"
            ordered = sorted(choices, key=lambda c: c.name)  # no, yes: the wire order
            item.values = {"no": "no", "yes": "yes"}
        else:
            doc["type"] = "multi" if many else "categorical"
            ordered = choices
            labels = []
            for choice in choices:
                label = choice.labels.get(self.default)
                if not label:
                    item.unsupported(
                        None,
                        f"its choice in choices sheet row {choice.number} has no label in the "
                        "default language (ODK may show an image), and deniable shows options "
                        "as text",
                        "give the choice a label",
                    )
                    return
                piped = _PIPED.search(label)
                if piped:
                    item.unsupported(
                        None,
                        f"its choice in choices sheet row {choice.number} shows the answer to "
                        f"${{{piped.group(1)}}}, and deniable shows text as written",
                        "write the label without it",
                    )
                    return
                labels.append(label)
            doc["options"] = labels
            item.values = {c.name: label for c, label in zip(choices, labels, strict=True)}
        for tag in self.languages.others:
            translated = []
            for choice in ordered:
                label = choice.labels.get(tag)
                if not label:
                    self.missing(tag, "choices", choice.number)
                    label = choice.labels.get(self.default) or choice.name
                translated.append(label or "")
            item.translated.setdefault(tag, {})["options"] = translated

    def integer_question(self, item: Item, doc: dict[str, Any]) -> None:
        row = item.row
        doc["type"] = "integer"
        constraint = row.get("constraint")
        bounds = parse_range(constraint, item.name) if constraint else None
        given = bounds or item.kind.bounds
        low, high = given
        plain = mech.names_plain(doc.get("mechanism")) or not self.privacy_given
        if not plain:
            if low is None or high is None:
                said = f"got {constraint!r}" if constraint else "the cell is empty"
                item.issue(
                    row.header("constraint"),
                    "a randomized integer needs its range, e.g. '. >= 0 and . <= 120' "
                    f"({said}); give it, or ask the question plainly (deniable::mechanism none)",
                )
                return
            doc["min"], doc["max"] = low, high
            return
        if constraint and bounds is None:
            self.ignored(row, "constraint", item)
        span = MAX_PLAIN_VALUES - 1
        if low is None and high is None:
            low, high = DEFAULT_RANGE
        elif low is None:
            assert high is not None
            low = max(0, high - span) if high > 0 else high - span
        elif high is None:
            high = low + span
        if (low, high) != given:
            self._ranged.append(f"{item.name} {low} to {high} (row {row.number})")
        doc["min"], doc["max"] = low, high

    def missing(self, tag: str, sheet: str, number: int) -> None:
        """A text missing in a translation, shown in the default language (one notice)."""
        rows = self._missing.setdefault(tag, {}).setdefault(sheet, [])
        if number not in rows:
            rows.append(number)

    # -- deciding what is kept ------------------------------------------------------------------
    def decide(self) -> None:
        """Metadata, repeats and (with drop_unsupported) rows that cannot be honoured are left
        out, each said once; the issues of every other row become problems."""
        metadata = [i for i in self.items if i.kind.what == "metadata" and i.repeat is None]
        for item in metadata:
            item.dropped = True
        if metadata:
            self.notice(
                "survey sheet: left out the metadata rows "
                + listed([f"{i.name or i.row.get('type')} (row {i.row.number})" for i in metadata])
                + ": deniable collects none of them, because they identify the respondent or "
                "the device"
            )
        for item in self.items:
            if item.kind.what == "repeat" and item.repeat is None:
                inside = [i for i in self.items if i.repeat is item or i is item]
                last = max(i.row.number for i in inside)
                for each in inside:
                    each.dropped = True
                rows = f"rows {item.row.number}-{last}"
                count = len(inside) - 1
                said = (
                    f"survey sheet, {rows} (the repeat {item.name or ''} and the {count} "
                    f"row{'s' if count != 1 else ''} in it)"
                )
                if self.drop:
                    self.notice(f"{said}: left out: a report answers each question once")
                else:
                    self.problem(
                        "survey",
                        item.row.number,
                        f"{said}: deniable cannot honour a repeat (a report answers each "
                        f"question once); ask its questions once, {DROP}",
                    )
        for item in self.items:
            if item.dropped or not item.issues:
                continue
            if self.drop and all(issue.droppable for issue in item.issues):
                item.dropped = True
                self.notice(f"{item.where}: left out: {item.issues[0].reason}")
            else:
                for issue in item.issues:
                    self.problem("survey", issue.row.number, issue.message)

    # -- conditions, notes and groups -----------------------------------------------------------
    def conditions(self) -> None:
        """Each kept question's condition: its groups' and its own, in deniable's grammar."""
        asked: dict[str, Item] = {}
        by_name: dict[str, Item] = {}
        group_conditions: dict[int, relevance.Reduced | None] = {}
        for item in self.items:
            if item.name:
                by_name.setdefault(item.name, item)
            if item.kind.what == "group" and item.repeat is None and item.row.get("relevant"):
                group_conditions[id(item)] = self.parse(item, asked, by_name)
            if item.kind.what != "question" or item.dropped:
                continue
            parts: list[relevance.Reduced | None] = [
                group_conditions.get(id(group))
                for group in item.groups
                if group.row.get("relevant")
            ]
            if item.row.get("relevant"):
                parts.append(self.parse(item, asked, by_name))
            self.combine(item, parts, asked)
            if item.qid is not None:
                asked[item.name or ""] = item

    def combine(
        self, item: Item, parts: list[relevance.Reduced | None], asked: dict[str, Item]
    ) -> None:
        """A question's condition from its groups' and its own (None: said where it is)."""
        if any(part is None for part in parts):
            return
        if any(part is False for part in parts):
            self.problem(
                "survey",
                item.row.number,
                f"{item.where}: its condition (with its groups') is never true, so it is "
                "never asked; correct the condition or remove the row",
            )
            return
        nodes = [part for part in parts if isinstance(part, relevance.Node)]
        if nodes:
            tree = relevance.conjoined(nodes)
            item.tree = tree
            item.doc["relevant"] = relevance.to_deniable(tree, self.value_of(asked))

    def parse(
        self, item: Item, asked: dict[str, Item], by_name: dict[str, Item]
    ) -> relevance.Reduced | None:
        """A row's `relevant` as a tree of asked questions' ids (None: said as a problem)."""
        text = item.row.get("relevant") or ""
        column = item.row.header("relevant")
        try:
            tree = relevance.parse_xlsform(text)
        except relevance.ConditionError as exc:
            self.problem("survey", item.row.number, f"{item.where}, column {column!r}: {exc}")
            return None
        ok = True
        for name in relevance.referenced(tree):
            if name in asked:
                continue
            ok = False
            other = by_name.get(name)
            if other is not None and other.dropped:
                self.depends(other, item, column, name)
            else:
                self.problem(
                    "survey",
                    item.row.number,
                    f"{item.where}, column {column!r}: ${{{name}}} is not a question asked "
                    "before this one",
                )
        if not ok:
            return None
        renamed = relevance.renamed(tree, {name: asked[name].qid or name for name in asked})
        trees = {i.qid: i.tree for i in asked.values()}
        reduced = relevance.answered(renamed, lambda qid: trees.get(qid))
        if isinstance(reduced, bool):
            return reduced
        try:
            relevance.to_deniable(reduced, self.value_of(asked))
        except relevance.ConditionError as exc:
            self.problem("survey", item.row.number, f"{item.where}, column {column!r}: {exc}")
            return None
        return reduced

    def depends(self, other: Item, item: Item, column: str, name: str) -> None:
        """A kept row's condition names a row left out: that row stays an error (said once)."""
        if id(other) in self._depended:
            return
        self._depended.add(id(other))
        if other.kind.what == "metadata":
            why = "it is a metadata row, which deniable never collects (it identifies the "
            why += "respondent or the device)"
        elif other.issues:
            why = other.issues[0].reason
        else:
            why = "it is left out"
        self.problem(
            "survey",
            other.row.number,
            f"{other.where}: row {item.row.number} ({item.name}) depends on it (its {column!r} "
            f"names ${{{name}}}), so it cannot be left out, and {why}; take the condition off "
            f"row {item.row.number}, or change this row into a question deniable asks",
        )

    def value_of(self, asked: dict[str, Item]) -> relevance.Literal:
        by_qid = {item.qid: item for item in asked.values()}

        def literal(qid: str, name: str) -> str:
            item = by_qid.get(qid) or asked.get(qid)
            values = item.values if item is not None else None
            if values is None:
                return name  # not a list question: the survey's check says what is wrong
            if name not in values:
                raise relevance.ConditionError(
                    f"{name!r} is not a choice of ${{{item.name if item else qid}}}; its "
                    "choices are " + ", ".join(repr(n) for n in values)
                )
            return values[name]

        return literal

    def notes(self) -> None:
        """Notes and group labels become the next kept question's note."""
        pending: list[tuple[Item, dict[str | None, str]]] = []
        for item in self.items:
            what = item.kind.what
            if item.dropped:
                continue
            if what in ("note", "group") and item.row.texts("label"):
                pending.append((item, item.row.texts("label")))
            elif what == "end-group":
                pending = self._close_group(pending, item)
            elif what == "question":
                if pending and not item.issues:
                    self.attach(item, pending)
                pending = []
        trailing = [p for p in pending if p[0].kind.what == "note"]
        if trailing:
            first = trailing[0][0]
            said = (
                f"{first.where}: a note is shown before the question after it, and no "
                "question follows"
            )
            if self.drop:
                self.notice(f"{said}: left out")
            else:
                self.problem(
                    "survey",
                    first.row.number,
                    f"{said}; move it before a question or remove it, {DROP}",
                )

    def _close_group(
        self, pending: list[tuple[Item, dict[str | None, str]]], end: Item
    ) -> list[tuple[Item, dict[str | None, str]]]:
        """At a group's end, its label still waiting for a question is left out (said)."""
        closing = end.groups[-1] if end.groups else None
        kept = []
        for entry in pending:
            if closing is not None and entry[0] is closing:
                self.notice(
                    f"{closing.where}: the group's label is not shown: no question of the group "
                    "is asked"
                )
                continue
            kept.append(entry)
        return kept

    def attach(self, item: Item, pending: list[tuple[Item, dict[str | None, str]]]) -> None:
        """The waiting notes and group labels become the question's note (in each language)."""
        for source, texts in pending:
            if texts.get(self.default) is None and source.kind.what == "group":
                self.notice(
                    f"{source.where}: the group's label is not shown: it has no text in the "
                    "default language"
                )
        pending = [(s, t) for s, t in pending if t.get(self.default) is not None]
        if not pending:
            return  # a note without its default text is a problem of its own row
        item.note_row = pending[0][0].row.number
        default = [texts.get(self.default) for _, texts in pending]
        item.doc["note"] = NOTE_SEPARATOR.join(t for t in default if t)
        for tag in self.languages.others:
            texts = []
            for source, labels in pending:
                text = labels.get(tag)
                if text is None:
                    self.missing(tag, "survey", source.row.number)
                    text = labels.get(self.default)
                texts.append(text or "")
            item.translated.setdefault(tag, {})["note"] = NOTE_SEPARATOR.join(texts)

    # -- the document ---------------------------------------------------------------------------
    @property
    def default_epsilon(self) -> float | None:
        return self._default_epsilon

    def read_default_epsilon(self) -> None:
        text = self.settings.get("deniable::epsilon")
        if text is None:
            return
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not value > 0 or value == float("inf"):
            self._default_epsilon = 1.0  # to check the rest as if it were given (said below)
            self.problem(
                "settings",
                self.settings.number,
                f"settings sheet, row {self.settings.number}, column "
                f"{self.settings.header('deniable::epsilon')!r}: expected a positive number "
                f"(the epsilon of every question that gives none), got {text!r}",
            )
            return
        self._default_epsilon = value

    def survey_id(self) -> str:
        given = self.settings.get("id_string")
        if given is not None:
            where = (
                f"settings sheet, row {self.settings.number}, column "
                f"{self.settings.header('id_string')!r}"
            )
        else:
            given, where = self.fallback_id, "the file's name (no form_id in the settings sheet)"
        sid = re.sub(r"[^a-z0-9]+", "-", given.strip().lower()).strip("-")[:64].strip("-")
        if not sid or not SURVEY_ID.fullmatch(sid):
            self.problem(
                "settings",
                self.settings.number,
                f"{where}: {given!r} cannot be a survey id; give 1-64 of a-z, 0-9 and '-'",
            )
            return "form"
        if sid != given:
            self.notice(f"{where}: {given!r} is not a survey id; the survey's id is {sid!r}")
        return sid

    def document(self) -> dict[str, Any]:
        settings = self.settings
        doc: dict[str, Any] = {"id": self.survey_id()}
        title = settings.get("title", self.default) or settings.get("title")
        doc["title"] = title or doc["id"]
        description = settings.get("deniable::description", self.default)
        if description is not None:
            doc["description"] = description
        if self.default is not None:
            doc["language"] = self.default
        for key in ("enrollment", "closes_at", "device"):
            value = settings.get(f"deniable::{key}")
            if value is not None:
                doc[key] = value
        kept = [i for i in self.items if i.kind.what == "question" and not i.dropped]
        doc["questions"] = [
            {key: i.doc[key] for key in _QUESTION_ORDER if key in i.doc}
            | {k: v for k, v in i.doc.items() if k not in _QUESTION_ORDER}
            for i in kept
        ]
        translations = {}
        for tag in self.languages.others:
            entry: dict[str, Any] = {"title": settings.get("title", tag) or doc["title"]}
            text = settings.get("deniable::description", tag)
            if text is not None:
                entry["description"] = text
            elif description is not None:
                entry["description"] = description
                self.missing(tag, "settings", settings.number)
            entry["questions"] = {}
            for item in kept:
                words = dict(item.translated.get(tag, {}))
                if "text" not in words:
                    self.missing(tag, "survey", item.row.number)
                    words["text"] = item.doc["text"]
                if "hint" in item.doc and "hint" not in words:
                    self.missing(tag, "survey", item.row.number)
                    words["hint"] = item.doc["hint"]
                if "hint" in words and "hint" not in item.doc:
                    self._lone_hints.setdefault(tag, []).append(str(item.row.number))
                    words.pop("hint")
                entry["questions"][item.qid] = {k: words[k] for k in _TEXT_ORDER if k in words}
            translations[tag] = entry
        if translations:
            doc["translations"] = translations
        design = settings.get("deniable::design")
        if design is not None:
            try:
                doc["design"] = parse_json(design.encode("utf-8"))
            except JSONTextError as exc:
                self.problem(
                    "settings",
                    settings.number,
                    f"settings sheet, row {settings.number}, column "
                    f"{settings.header('deniable::design')!r}: not valid JSON ({exc})",
                )
        return doc

    def no_privacy_choice(self) -> bool:
        """One problem when no row and no setting makes a privacy choice."""
        if self.settings.get("deniable::epsilon") is not None:
            return False
        questions = [i for i in self.items if i.kind.what == "question" and not i.dropped]
        if not questions or any(
            i.row.get(key) is not None for i in questions for key in ROW_PRIVACY
        ):
            return False
        named = listed([f"{i.name} (row {i.row.number})" for i in questions])
        self.problem(
            "survey",
            0,
            "the form makes no privacy choice: add a column 'deniable::epsilon' to the settings "
            "sheet with the epsilon of every question (e.g. 1), and 'none' in a column "
            "'deniable::mechanism' on each question asked plainly (docs/xlsform.md, \"Bring your "
            f'ODK/Kobo form"); the questions: {named}',
        )
        return True

    def check_questions(self) -> None:
        """Each kept question checked alone as deniable creates it (all problems, one run)."""
        for index, item in enumerate(
            i for i in self.items if i.kind.what == "question" and not i.dropped
        ):
            if item.issues:
                continue
            single = {k: v for k, v in item.doc.items() if k != "relevant"}
            try:
                Question.from_dict(single, where=f"questions[{index}].")
            except SurveyError as exc:
                self.problem("survey", item.row.number, self.in_form_terms(str(exc)))

    def say_notices(self) -> None:
        for header, items in self._ignored_rows.items():
            column = self.by_header["survey"].get(header)
            key = column.key if column else header
            kept = [i for i in items if not i.dropped]
            if not kept:
                continue
            rows = listed([str(i.row.number) for i in kept])
            why = DISPLAY.get(key, "what ODK does with it")
            where = f"row {rows}" if len(kept) == 1 else f"rows {rows}"
            self.notice(
                f"survey sheet, column {header!r}: ignored on {where}: it only changes {why}"
            )
        for sheet in ("survey", "choices"):
            for column in self.columns[sheet]:
                self.display_notice(sheet, column)
        if self._ranged:
            self.notice(
                "survey sheet: plain integers without a range are asked as whole numbers in "
                f"the widest range a plain integer holds ({MAX_PLAIN_VALUES:,} values): "
                f"{listed(self._ranged)}; give a constraint such as '. >= 0 and . <= 120' "
                "to change it"
            )
        for tag, sheets in self._missing.items():
            places = "; ".join(
                f"{sheet} sheet rows {listed([str(n) for n in rows])}"
                for sheet, rows in sheets.items()
            )
            self.notice(
                f"the translation {tag!r} has no text at {places}: shown there in the default "
                "language"
            )
        for tag, rows in self._lone_hints.items():
            self.notice(
                f"survey sheet rows {listed(rows)}: the hint in {tag!r} is not shown, because "
                "the default language has no hint there"
            )

    def display_notice(self, sheet: str, column: Column) -> None:
        """One notice for a column deniable ignores, when a kept row fills it."""
        key = column.key
        if key in HONOURED[sheet] or key.startswith("deniable::") or key in UNHONOURED:
            return
        if key in ("default", "choice_filter", "required", "constraint"):
            return  # said per row (ignored only where it can be)
        rows = self._filled(sheet, column.header)
        if not rows:
            return
        if not column.known and sheet == "choices":
            why = "deniable reads a choice's list_name, name and label (ODK may filter by it)"
        elif not column.known:
            why = "it is not an XLSForm column (ODK ignores it too)"
        else:
            why = f"it only changes {DISPLAY.get(key, 'how ODK shows or sends the form')}"
        self.notice(f"{sheet} sheet, column {column.header!r}: ignored: {why}")

    def _filled(self, sheet: str, header: str) -> list[int]:
        rows = []
        if sheet == "choices":
            return [n for n, raw in self.book.sheet("choices").numbered() if raw.get(header)]
        for item in self.items:
            if not item.dropped and header in item.row.headers.values():
                rows.append(item.row.number)
        return rows

    def in_form_terms(self, message: str) -> str:
        """A `Survey.from_dict` error said with the form's sheet, row and column."""
        kept = [i for i in self.items if i.kind.what == "question" and not i.dropped]
        return in_form_terms(message, kept, self.settings, self.default)

    def run(self) -> dict[str, Any]:
        self.read_default_epsilon()
        self.privacy_given = self.settings.get("deniable::epsilon") is not None or any(
            self.by_header["survey"].get(h) is not None
            and self.by_header["survey"][h].key in ROW_PRIVACY
            for _, raw in self.book.sheet("survey").numbered()
            for h in raw
        )
        self.read_items()
        self.check_items()
        self.decide()
        self.conditions()
        self.notes()
        doc = self.document()
        if not self.no_privacy_choice():
            self.check_questions()
        kept = [i for i in self.items if i.kind.what == "question" and not i.dropped]
        if not kept and not self.problems:
            self.problem(
                "survey",
                0,
                "survey sheet: no questions deniable can ask; add a select_one, "
                "select_multiple, integer or text row",
            )
        self.say_notices()
        return doc


_QUESTION_ORDER = ("id", "text", "type")


def _stem(filename: str) -> str:
    stem = filename.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    for suffix in (".xlsx", ".xls"):
        if stem.lower().endswith(suffix):
            return stem[: -len(suffix)]
    return stem


def read_xlsform(
    data: bytes, *, filename: str = "form.xlsx", drop_unsupported: bool = False
) -> ImportedForm:
    """The survey document of an XLSForm (.xlsx or .xls) and its notices, checked as ODK
    reads the form (pyxform) and as deniable creates surveys (`Survey.from_dict`).

    XLSFormError carries every problem (one line each, naming the sheet, row and column) and
    the notices; `filename` gives the survey id when the settings have no form_id;
    `drop_unsupported` leaves out the rows deniable cannot honour, each named in a notice."""
    book = read_book(data)
    stem = _stem(filename) or "form"
    importer = _Importer(book, stem, drop_unsupported)
    doc = importer.run()
    try:
        check_with_pyxform(_without_deniable(book), stem)
    except XLSFormError as exc:
        for problem in exc.problems:
            importer.problem("survey", 10**6, problem)
    if not importer.problems:
        try:
            Survey.from_dict(doc)
        except SurveyError as exc:
            importer.problem("survey", 10**6, importer.in_form_terms(str(exc)))
    if importer.problems:
        ordered = [text for _, _, text in sorted(importer.problems, key=lambda p: p[:2])]
        raise XLSFormError(list(dict.fromkeys(ordered)), importer.notices)
    return ImportedForm(doc, importer.notices)


def _without_deniable(book: Book) -> Book:
    """The book without its deniable:: columns, which pyxform would read as languages."""
    sheets = {}
    for name, sheet in book.sheets.items():
        keep = [h for h in sheet.headers if not h.strip().lower().startswith("deniable")]
        rows = [{h: v for h, v in row.items() if h in keep} for row in sheet.rows]
        sheets[name] = type(sheet)(name, keep, rows)
    return Book(sheets, book.sheet_names)


def import_xlsform(
    data: bytes, *, filename: str = "form.xlsx", drop_unsupported: bool = False
) -> dict[str, Any]:
    """The survey document of an XLSForm (see `read_xlsform`), without its notices."""
    return read_xlsform(data, filename=filename, drop_unsupported=drop_unsupported).document


__all__ = ["ImportedForm", "import_xlsform", "read_xlsform"]
