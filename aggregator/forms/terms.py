"""`Survey.from_dict`'s errors (`questions[3].epsilon: ...`) said again in an XLSForm's terms:
the sheet, the row and the column the researcher wrote (docs/xlsform.md)."""

from __future__ import annotations

import re

from deniable.aggregator.forms.items import Item
from deniable.aggregator.forms.languages import column_name
from deniable.aggregator.forms.rows import Row
from deniable.shared import mechanisms as mech
from deniable.shared.questions import SKETCH_DEFAULTS

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
    "id": "id_string",
    "title": "title",
    "description": "deniable::description",
    "language": "default_language",
    "enrollment": "deniable::enrollment",
    "closes_at": "deniable::closes_at",
    "device": "deniable::device",
    "design": "deniable::design",
}


def in_form_terms(message: str, kept: list[Item], settings: Row, default: str | None) -> str:
    """A `Survey.from_dict` error (`path: message`) said with the sheet, row and column, for
    the document of the questions `kept` (in order), the settings row and the default
    language's tag."""
    match = _PATH.fullmatch(message)
    if match is None:
        return f"survey sheet: {message}"
    path, said = match.group("path"), match.group("message")
    question = _QUESTION_PATH.match(path)
    if question:
        i = int(question.group("i"))
        if i >= len(kept):
            return f"survey sheet: {said}"
        item = kept[i]
        name = question.group("field")
        if name == "options" and item.list_row is not None:
            return f"choices sheet, row {item.list_row} (the list of {item.name}): {said}"
        if name == "note" and item.note_row is not None:
            return f"survey sheet, row {item.note_row} (the note before {item.name}): {said}"
        key = _QUESTION_COLUMNS.get(name or "")
        if name in mech.PARAMETERS or name in SKETCH_DEFAULTS:
            return f"{item.where}, the deniable:: parameter columns: {said}"
        if key is None:
            return f"{item.where}: {said}"
        tag = default if key in ("label", "hint") else None
        column = item.row.header(key, tag)
        if key == "deniable::epsilon" and said.startswith("missing"):
            said = (
                "missing: give the question its epsilon (e.g. 1), or every question a default "
                "in a settings column 'deniable::epsilon', or 'none' in 'deniable::mechanism' "
                "to ask it plainly"
            )
        return f"{item.where}, column {column!r}: {said}"
    translation = _TRANSLATION_PATH.fullmatch(path)
    if translation:
        tag = translation.group("tag")
        rest = (translation.group("rest") or "").split(".")
        by_qid = {i.qid: i for i in kept}
        if rest[0] == "questions" and len(rest) >= 2 and rest[1] in by_qid:
            item = by_qid[rest[1]]
            field_name = rest[2].split("[")[0] if len(rest) > 2 else "text"
            base = "hint" if field_name == "hint" else "label"
            if field_name == "options" and item.list_row is not None:
                return (
                    f"choices sheet, row {item.list_row} ({item.name}), column "
                    f"{column_name('label', tag)!r}: {said}"
                )
            number = item.note_row if field_name == "note" else item.row.number
            return (
                f"survey sheet, row {number} ({item.name}), column "
                f"{item.row.header(base, tag)!r}: {said}"
            )
        if rest[0] in ("title", "description"):
            key = _SETTINGS[rest[0]]
            return f"settings sheet, column {settings.header(key, tag)!r}: {said}"
        return f"the columns in {tag!r}: {said}"
    head = path.split(".")[0].split("[")[0]
    if head in _SETTINGS:
        return f"settings sheet, column {settings.header(_SETTINGS[head])!r}: {said}"
    return f"survey sheet: {message}"
