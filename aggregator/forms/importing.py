"""An XLSForm's rows as a survey document (docs/xlsform.md has the table of columns).

Every row is either turned into something the survey keeps or refused with its sheet and row:
nothing a form says is dropped unseen. The document is then checked by `Survey.from_dict`,
and its errors are said again in the form's terms (sheet, row, column).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deniable.aggregator.forms import relevance
from deniable.aggregator.forms.languages import column_name, find_languages, split_column
from deniable.aggregator.forms.workbook import (
    Book,
    Sheet,
    XLSFormError,
    check_with_pyxform,
    read_book,
)
from deniable.shared import mechanisms as mech
from deniable.shared.canonical import JSONTextError, parse_json
from deniable.shared.errors import SurveyError
from deniable.shared.questions import SKETCH_DEFAULTS
from deniable.shared.survey import SURVEY_ID, Survey

#: Mechanism parameters a row may give as `deniable::<name>` columns.
PARAMETERS = sorted(
    {p for names in mech.PARAMETERS.values() for p in names}
    | {"k", "m", "keep", "h", "f", "p", "q"}
    | {p for defaults in SKETCH_DEFAULTS.values() for p in defaults}
)
#: Sketch parameters that are whole numbers (the others are probabilities, kept as text).
WHOLE_PARAMETERS = {"k", "m", "h"}
PRIVACY_COLUMNS = ("deniable::mechanism", "deniable::epsilon", "deniable::candidates")
SURVEY_COLUMNS = {
    "type",
    "name",
    "label",
    "hint",
    "relevant",
    "constraint",
    "required",
    *PRIVACY_COLUMNS,
    *(f"deniable::{p}" for p in PARAMETERS),
}
CHOICES_COLUMNS = {"list_name", "name", "label"}
SETTINGS_COLUMNS = {
    "form_id",
    "form_title",
    "default_language",
    "version",
    "deniable::description",
    "deniable::enrollment",
    "deniable::closes_at",
    "deniable::device",
    "deniable::design",
}
#: pyxform's aliases of the columns above.
ALIASES = {"relevance": "relevant", "caption": "label", "list name": "list_name", "value": "name"}
_SELECT_ONE = ("select_one", "select one", "select1")
_SELECT_MANY = ("select_multiple", "select all that apply")
_GROUP = {"begin group", "begin_group", "end group", "end_group"}
_REPEAT = {"begin repeat", "begin_repeat", "end repeat", "end_repeat"}
_RANGE = re.compile(r"\s*\.\s*>=\s*(-?[0-9]{1,12})\s+and\s+\.\s*<=\s*(-?[0-9]{1,12})\s*")
_RANGE_REVERSED = re.compile(r"\s*\.\s*<=\s*(-?[0-9]{1,12})\s+and\s+\.\s*>=\s*(-?[0-9]{1,12})\s*")
_YES = {"yes", "true", "true()", "1"}
_NO = {"no", "false", "false()", "0"}
NOTE_SEPARATOR = "\n\n"
_TEXT_ORDER = ("text", "options", "hint", "note")
_WHOLE = re.compile(r"[0-9]{1,12}")


@dataclass
class _Row:
    """One survey-sheet row's cells by base column and language (None: default)."""

    number: int
    cells: dict[tuple[str, str | None], str]

    def get(self, base: str, language: str | None = None) -> str | None:
        return self.cells.get((base, language))


@dataclass
class _Where:
    """Where each part of the document came from, to say errors in the form's terms."""

    question_rows: list[int] = field(default_factory=list)
    question_names: list[str] = field(default_factory=list)
    note_rows: dict[str, int] = field(default_factory=dict)
    list_rows: dict[str, int] = field(default_factory=dict)  # question id -> its list's first row


def _cells(sheet: Sheet, row: Mapping[str, str], number: int, allowed: set[str]) -> _Row:
    cells: dict[tuple[str, str | None], str] = {}
    for header, value in row.items():
        base, language = split_column(header)
        base = ALIASES.get(base.lower(), base.lower() if "::" not in base else base)
        if base not in allowed:
            raise XLSFormError(
                f"{sheet.name} sheet, row {number}, column {header!r}: deniable cannot honour "
                f"this column; remove it or empty it (docs/xlsform.md lists the columns)"
            )
        cells[(base, language)] = value
    return _Row(number, cells)


def _settings(book: Book) -> _Row:
    sheet = book.sheet("settings")
    rows = sheet.numbered()
    if not rows:
        return _Row(2, {})
    number, row = rows[0]
    return _Row(number, _cells(sheet, row, number, SETTINGS_COLUMNS).cells)


@dataclass
class _Choice:
    number: int
    name: str
    labels: dict[str | None, str]


def _choices(book: Book) -> dict[str, list[_Choice]]:
    sheet = book.sheet("choices")
    lists: dict[str, list[_Choice]] = {}
    for number, row in sheet.numbered():
        cells = _cells(sheet, row, number, CHOICES_COLUMNS).cells
        list_name = cells.get(("list_name", None))
        name = cells.get(("name", None))
        if not list_name or not name:
            missing = "list_name" if not list_name else "name"
            raise XLSFormError(f"choices sheet, row {number}: {missing} is empty; fill it")
        labels = {language: text for (base, language), text in cells.items() if base == "label"}
        lists.setdefault(list_name, []).append(_Choice(number, name, labels))
    return lists


class _Importer:
    """Builds the survey document row by row."""

    def __init__(self, book: Book, fallback_id: str) -> None:
        self.book = book
        self.settings = _settings(book)
        self.languages = find_languages(book, self.settings.get("default_language"))
        self.lists = _choices(book)
        self.fallback_id = fallback_id
        self.where = _Where()
        self.values: dict[str, dict[str, str]] = {}  # question -> choice name -> deniable value
        self.names: dict[str, tuple[str, int]] = {}  # question id -> (kind, row)
        # language -> question id -> its texts there (text, options, hint, note)
        self.translated_questions: dict[str, dict[str, Any]] = {}

    # -- languages ------------------------------------------------------------------------------
    @property
    def default(self) -> str | None:
        return self.languages.default

    def tag(self, language: str | None) -> str:
        return self.languages.tag[language] or "en"

    # -- the document ---------------------------------------------------------------------------
    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"id": self.survey_id()}
        settings = self.settings
        title = settings.get("form_title", self.default) or settings.get("form_title")
        doc["title"] = title or doc["id"]
        description = settings.get("deniable::description", self.default)
        if description is None and self.default is not None:
            description = settings.get("deniable::description")
        if description is not None:
            doc["description"] = description
        if self.languages.tag[self.default] is not None:
            doc["language"] = self.languages.tag[self.default]
        for key in ("enrollment", "closes_at", "device"):
            value = settings.get(f"deniable::{key}")
            if value is not None:
                doc[key] = value
        doc["questions"] = self.questions()
        translations = self.translations(doc)
        if translations:
            doc["translations"] = translations
        design = settings.get("deniable::design")
        if design is not None:
            try:
                doc["design"] = parse_json(design.encode("utf-8"))
            except JSONTextError as exc:
                raise XLSFormError(
                    f"settings sheet, row {settings.number}, column 'deniable::design': not "
                    f"valid JSON ({exc})"
                ) from None
        return doc

    def survey_id(self) -> str:
        given = self.settings.get("form_id")
        where = f"settings sheet, row {self.settings.number}, column 'form_id'"
        if given is None:
            given, where = self.fallback_id, "the file's name (no form_id in the settings sheet)"
        sid = given.strip().lower()
        if not SURVEY_ID.fullmatch(sid):
            raise XLSFormError(
                f"{where}: {given!r} is not a survey id; give 1-64 of a-z, 0-9 and '-', "
                "starting with a letter or digit"
            )
        return sid

    def translations(self, doc: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for language in self.languages.others:
            entry: dict[str, Any] = {}
            # ODK shows one title in every language: a form without form_title::<language>
            # keeps the default title there too (docs/xlsform.md#languages).
            entry["title"] = self.settings.get("form_title", language) or doc["title"]
            description = self.settings.get("deniable::description", language)
            if description is not None:
                entry["description"] = description
            entry["questions"] = {
                qid: {key: texts[key] for key in _TEXT_ORDER if key in texts}
                for qid, texts in self.translated_questions.get(language, {}).items()
            }
            found[self.tag(language)] = entry
        return found

    # -- the survey sheet -----------------------------------------------------------------------
    def questions(self) -> list[dict[str, Any]]:
        sheet = self.book.sheet("survey")
        if not sheet.headers:
            raise XLSFormError("survey sheet: missing or empty; an XLSForm needs a survey sheet")
        questions: list[dict[str, Any]] = []
        pending: dict[str | None, list[str]] = {}
        pending_row: int | None = None
        for number, raw in sheet.numbered():
            row = _cells(sheet, raw, number, SURVEY_COLUMNS)
            kind = " ".join((row.get("type") or "").split())
            if not kind:
                raise XLSFormError(f"survey sheet, row {number}: no type; give the row a type")
            lowered = kind.lower()
            if lowered in _GROUP:
                self.group_row(row, lowered, pending)
                if lowered.startswith("begin") and row.get("label", self.default):
                    pending_row = pending_row or number
                continue
            if lowered in _REPEAT:
                raise XLSFormError(
                    f"survey sheet, row {number}: deniable cannot honour a repeat (a report "
                    "answers each question once); ask the questions once, or in several surveys"
                )
            if lowered == "note":
                self.note_row(row, pending)
                pending_row = pending_row or number
                continue
            question = self.question(row, kind)
            if pending:
                self.attach_note(question, pending, pending_row or number)
                pending, pending_row = {}, None
            questions.append(question)
        if pending:
            raise XLSFormError(
                f"survey sheet, row {pending_row}: a note is shown before the question after it, "
                "and no question follows; move it before a question or remove it"
            )
        if not questions:
            raise XLSFormError(
                "survey sheet: no questions; add a select_one, select_multiple, integer or text row"
            )
        return questions

    def only(self, row: _Row, allowed: set[str], what: str) -> None:
        """Refuse any cell of a row beyond the columns `what` can honour."""
        for base, language in row.cells:
            if base not in allowed:
                header = column_name(base, language)
                raise XLSFormError(
                    f"survey sheet, row {row.number}, column {header!r}: deniable cannot honour "
                    f"it on {what}; empty the cell (docs/xlsform.md)"
                )

    def group_row(self, row: _Row, kind: str, pending: dict[str | None, list[str]]) -> None:
        if row.get("relevant"):
            raise XLSFormError(
                f"survey sheet, row {row.number}: deniable cannot honour a group's relevant; "
                "put the condition on each question of the group (docs/xlsform.md#groups)"
            )
        self.only(row, {"type", "name", "label"}, "a group row")
        if kind.startswith("begin"):
            self.add_text(row, pending)

    def note_row(self, row: _Row, pending: dict[str | None, list[str]]) -> None:
        if row.get("relevant"):
            raise XLSFormError(
                f"survey sheet, row {row.number}: deniable cannot honour a note's relevant (a "
                "note is shown with the question after it); put the condition on that question"
            )
        self.only(row, {"type", "name", "label"}, "a note")
        if not row.get("label", self.default):
            raise XLSFormError(
                f"survey sheet, row {row.number}, column "
                f"{column_name('label', self.default)!r}: a note needs its text"
            )
        self.add_text(row, pending)

    def add_text(self, row: _Row, pending: dict[str | None, list[str]]) -> None:
        for (base, language), text in row.cells.items():
            if base == "label":
                pending.setdefault(language, []).append(text)

    def attach_note(
        self, question: dict[str, Any], pending: dict[str | None, list[str]], number: int
    ) -> None:
        qid = question["id"]
        self.where.note_rows[qid] = number
        for language, texts in pending.items():
            text = NOTE_SEPARATOR.join(texts)
            if language == self.default:
                question["note"] = text
            else:
                self.translated(language, qid)["note"] = text
        if self.default not in pending:
            raise XLSFormError(
                f"survey sheet, row {number}, column {column_name('label', self.default)!r}: "
                "the note has no text in the default language"
            )

    def translated(self, language: str, qid: str) -> dict[str, Any]:
        return self.translated_questions.setdefault(language, {}).setdefault(qid, {})

    def question(self, row: _Row, kind: str) -> dict[str, Any]:
        number = row.number
        qid = row.get("name")
        if not qid:
            raise XLSFormError(f"survey sheet, row {number}: no name; give the question a name")
        where = f"survey sheet, row {number} ({qid})"
        text = row.get("label", self.default)
        if not text:
            raise XLSFormError(
                f"{where}, column {column_name('label', self.default)!r}: missing; every "
                "question needs its text in the default language"
            )
        doc: dict[str, Any] = {"id": qid, "text": text}
        lowered = kind.lower()
        words = lowered.split(" ")
        prefix = next(
            (p for p in (*_SELECT_ONE, *_SELECT_MANY) if lowered.startswith(p + " ")), None
        )
        ranged = sketched = False  # whether the row may give a range, or candidates
        if prefix is not None:
            rest = kind[len(prefix) + 1 :].split(" ")
            if len(rest) != 1:
                raise XLSFormError(
                    f"{where}, column 'type': deniable cannot honour {' '.join(rest[1:])!r} "
                    "(an answer outside the list would be sent as typed); list every option"
                )
            self.choice_question(doc, row, rest[0], many=prefix in _SELECT_MANY, where=where)
        elif words == ["integer"] or words == ["int"]:
            doc["type"] = "integer"
            ranged = True
            doc["min"], doc["max"] = self.range_of(row, where)
        elif words == ["text"] or words == ["string"]:
            doc["type"] = "text"
            sketched = True
        else:
            raise XLSFormError(
                f"{where}, column 'type': deniable cannot honour {kind!r}; its questions are "
                "select_one (yes/no or categorical), select_multiple, integer and text, and note "
                "rows (docs/xlsform.md)"
            )
        if row.get("constraint") and not ranged:
            raise XLSFormError(
                f"{where}, column 'constraint': only an integer's range (. >= a and . <= b) "
                "can be honoured; empty the cell"
            )
        required = (row.get("required") or "yes").strip().lower()
        if required in _NO:
            raise XLSFormError(
                f"{where}, column 'required': deniable asks every question a respondent is "
                "shown (a report holds exactly the relevant ones); leave it empty or yes, and "
                "use relevant to skip the question"
            )
        if required not in _YES:
            raise XLSFormError(
                f"{where}, column 'required': expected yes or empty, got {required!r}"
            )
        self.privacy(doc, row, where, sketched=sketched)
        hint = row.get("hint", self.default)
        if hint is not None:
            doc["hint"] = hint
        for (base, language), value in row.cells.items():
            if language is None or language == self.default:
                continue
            if base == "label":
                self.translated(language, qid)["text"] = value
            elif base == "hint":
                self.translated(language, qid)["hint"] = value
        for language in self.languages.others:
            if row.get("label", language) is None:
                raise XLSFormError(
                    f"{where}, column {column_name('label', language)!r}: missing; give the "
                    "question's text in every language of the form"
                )
        condition = row.get("relevant")
        if condition:
            doc["relevant"] = self.condition(condition, qid, where)
        if qid in self.names:
            raise XLSFormError(
                f"{where}, column 'name': {qid!r} is also the name of row {self.names[qid][1]}"
            )
        self.names[qid] = (doc["type"], number)
        self.where.question_rows.append(number)
        self.where.question_names.append(qid)
        return doc

    def choice_question(
        self, doc: dict[str, Any], row: _Row, list_name: str, *, many: bool, where: str
    ) -> None:
        choices = self.lists.get(list_name)
        if not choices:
            raise XLSFormError(
                f"{where}, column 'type': the choices sheet has no list {list_name!r}"
            )
        qid = doc["id"]
        self.where.list_rows[qid] = choices[0].number
        names = [c.name for c in choices]
        binary = not many and sorted(names) == ["no", "yes"]
        if binary:
            doc["type"] = "binary"
            ordered = sorted(choices, key=lambda c: c.name)  # no, yes: the wire order
            self.values[qid] = {"no": "no", "yes": "yes"}
        else:
            doc["type"] = "multi" if many else "categorical"
            ordered = choices
            labels = []
            for choice in choices:
                label = choice.labels.get(self.default)
                if not label:
                    raise XLSFormError(
                        f"choices sheet, row {choice.number}, column "
                        f"{column_name('label', self.default)!r}: missing; every choice needs "
                        "a label in the default language"
                    )
                labels.append(label)
            doc["options"] = labels
            self.values[qid] = {c.name: label for c, label in zip(choices, labels, strict=True)}
        for language in self.languages.others:
            translated = []
            for choice in ordered:
                label = choice.labels.get(language)
                if not label:
                    raise XLSFormError(
                        f"choices sheet, row {choice.number}, column "
                        f"{column_name('label', language)!r}: missing; give every choice a "
                        "label in every language of the form"
                    )
                translated.append(label)
            self.translated(language, qid)["options"] = translated

    def range_of(self, row: _Row, where: str) -> tuple[int, int]:
        constraint = row.get("constraint")
        if not constraint:
            raise XLSFormError(
                f"{where}, column 'constraint': an integer question needs its range, e.g. "
                "'. >= 0 and . <= 120'"
            )
        match = _RANGE.fullmatch(constraint)
        if match:
            return int(match.group(1)), int(match.group(2))
        match = _RANGE_REVERSED.fullmatch(constraint)
        if match:
            return int(match.group(2)), int(match.group(1))
        raise XLSFormError(
            f"{where}, column 'constraint': deniable honours only an integer's range, written "
            f"'. >= a and . <= b'; got {constraint!r}"
        )

    def privacy(self, doc: dict[str, Any], row: _Row, where: str, *, sketched: bool) -> None:
        mechanism = row.get("deniable::mechanism")
        if mechanism is not None:
            doc["mechanism"] = mechanism.strip()
        epsilon = row.get("deniable::epsilon")
        if epsilon is not None:
            try:
                doc["epsilon"] = float(epsilon)
            except ValueError:
                raise XLSFormError(
                    f"{where}, column 'deniable::epsilon': expected a number, got {epsilon!r}"
                ) from None
        params = {
            base.removeprefix("deniable::"): value
            for (base, _), value in row.cells.items()
            if base.removeprefix("deniable::") in PARAMETERS and base.startswith("deniable::")
        }
        if params:
            if mechanism is None:
                first = sorted(params)[0]
                raise XLSFormError(
                    f"{where}, column 'deniable::{first}': a mechanism's parameter needs the "
                    "mechanism; fill deniable::mechanism"
                )
            doc[mechanism.strip()] = {
                key: int(value) if key in WHOLE_PARAMETERS and _WHOLE.fullmatch(value) else value
                for key, value in sorted(params.items())
            }
        candidates = row.get("deniable::candidates")
        if candidates is not None:
            if not sketched:
                raise XLSFormError(
                    f"{where}, column 'deniable::candidates': only a text question has "
                    "candidates; empty the cell"
                )
            doc["candidates"] = [line.strip() for line in candidates.splitlines() if line.strip()]

    def condition(self, text: str, qid: str, where: str) -> str:
        try:
            tree = relevance.parse_xlsform(text)
            for name in relevance.referenced(tree):
                if name not in self.names:
                    raise relevance.ConditionError(
                        f"${{{name}}} is not a question asked before this one"
                    )
            return relevance.to_deniable(tree, lambda q, value: self.value_of(q, value))
        except relevance.ConditionError as exc:
            raise XLSFormError(f"{where}, column 'relevant': {exc}") from None

    def value_of(self, qid: str, name: str) -> str:
        """The deniable value (a label, or yes/no) of a choice's name in question qid's list."""
        values = self.values.get(qid)
        if values is None:
            return name  # not a list question: the survey's check says what is wrong
        if name not in values:
            raise relevance.ConditionError(
                f"{name!r} is not a choice of ${{{qid}}}; its choices are "
                + ", ".join(repr(n) for n in values)
            )
        return values[name]


_PATH = re.compile(r"(?P<path>[A-Za-z0-9_.\[\]-]+): (?P<message>.*)", re.DOTALL)
_QUESTION_PATH = re.compile(r"questions\[(?P<i>\d+)\](?:\.(?P<field>[a-z_]+))?")
_TRANSLATION_PATH = re.compile(r"translations\.(?P<tag>[A-Za-z0-9-]+)(?:\.(?P<rest>.*))?")
_QUESTION_COLUMNS = {
    "id": "name",
    "text": "label",
    "type": "type",
    "min": "constraint",
    "max": "constraint",
    "relevant": "relevant",
    "hint": "hint",
    "candidates": "deniable::candidates",
    "epsilon": "deniable::epsilon",
    "mechanism": "deniable::mechanism",
}
_SETTINGS = {
    "id": "form_id",
    "title": "form_title",
    "description": "deniable::description",
    "language": "default_language",
    "enrollment": "deniable::enrollment",
    "closes_at": "deniable::closes_at",
    "device": "deniable::device",
    "design": "deniable::design",
}


def _in_form_terms(message: str, importer: _Importer) -> str:
    """A `Survey.from_dict` error (`path: message`) said with the sheet, row and column."""
    match = _PATH.fullmatch(message)
    if match is None:
        return f"survey sheet: {message}"
    path, said = match.group("path"), match.group("message")
    where = importer.where
    question = _QUESTION_PATH.match(path)
    if question:
        i = int(question.group("i"))
        if i >= len(where.question_rows):
            return f"survey sheet: {said}"
        qid, number = where.question_names[i], where.question_rows[i]
        name = question.group("field")
        if name == "options" and qid in where.list_rows:
            return f"choices sheet, row {where.list_rows[qid]} (the list of {qid}): {said}"
        if name == "note" and qid in where.note_rows:
            return f"survey sheet, row {where.note_rows[qid]} (the note before {qid}): {said}"
        column = _QUESTION_COLUMNS.get(name or "")
        if name in mech.PARAMETERS or name in SKETCH_DEFAULTS:
            column = "the deniable:: parameter columns"
        if column == "label":
            column = column_name("label", importer.default)
        at = f", column {column!r}" if column and not column.startswith("the ") else ""
        at = at or (f", {column}" if column else "")
        return f"survey sheet, row {number} ({qid}){at}: {said}"
    translation = _TRANSLATION_PATH.fullmatch(path)
    if translation:
        tag = translation.group("tag")
        language = next((key for key in importer.languages.others if importer.tag(key) == tag), tag)
        rest = translation.group("rest") or ""
        parts = rest.split(".")
        if parts[0] == "questions" and len(parts) >= 2 and parts[1] in where.question_names:
            i = where.question_names.index(parts[1])
            field_name = parts[2].split("[")[0] if len(parts) > 2 else "text"
            base = "hint" if field_name == "hint" else "label"
            sheet = "choices" if field_name == "options" else "survey"
            number = where.question_rows[i]
            if sheet == "choices":
                number = where.list_rows.get(parts[1], number)
            elif field_name == "note":
                number = where.note_rows.get(parts[1], number)
            return (
                f"{sheet} sheet, row {number} ({parts[1]}), column "
                f"{column_name(base, language)!r}: {said}"
            )
        if parts[0] in ("title", "description"):
            base = _SETTINGS[parts[0]]
            return f"settings sheet, column {column_name(base, language)!r}: {said}"
        return f"the columns in {language!r} (label::{language}): {said}"
    head = path.split(".")[0].split("[")[0]
    if head in _SETTINGS:
        return f"settings sheet, column {_SETTINGS[head]!r}: {said}"
    return f"survey sheet: {message}"


def import_xlsform(data: bytes, *, filename: str = "form.xlsx") -> dict[str, Any]:
    """The survey document of an .xlsx XLSForm, checked as ODK reads it (pyxform) and as
    deniable creates surveys (`Survey.from_dict`); XLSFormError names the sheet and row.

    `filename` gives the survey id when the settings sheet has no form_id."""
    book = read_book(data)
    stem = filename.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    stem = stem[: -len(".xlsx")] if stem.lower().endswith(".xlsx") else stem
    importer = _Importer(book, stem or "form")
    doc = importer.document()  # deniable's refusals first: they say what to do instead
    check_with_pyxform(book, stem or "form")
    try:
        Survey.from_dict(doc)
    except SurveyError as exc:
        raise XLSFormError(_in_form_terms(str(exc), importer)) from None
    return doc
