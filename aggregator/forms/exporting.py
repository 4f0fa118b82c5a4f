"""A survey written back as an XLSForm workbook (openpyxl), from its resolved form.

Everything the resolved survey holds goes into a column that `import_xlsform` reads back to the
same resolved survey, so import -> export -> import keeps the survey's hash: the mechanisms'
exact parameters (`deniable::keep` and the like), notes as `note` rows, translations as
`label::Name (tag)` columns, conditions in XLSForm's syntax (docs/xlsform.md#writing-a-form-back).
"""

from __future__ import annotations

import io
import re
from typing import Any

from deniable.aggregator.forms import relevance
from deniable.aggregator.forms.languages import column_name, language_title
from deniable.aggregator.forms.workbook import XLSFormError
from deniable.shared import conditions
from deniable.shared.canonical import canonical_json
from deniable.shared.questions import BINARY_OPTIONS, QUESTION_TYPES
from deniable.shared.survey import Survey

_XML_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_SLUG = re.compile(r"[^0-9a-z_]+")
_PARAMETER_COLUMNS = ("mechanism", "epsilon")


class _Lists:
    """The choices sheet: one list per distinct set of choices, named for its first user."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.known: dict[tuple[Any, ...], str] = {}

    def add(self, wanted: str, choices: list[tuple[str, dict[str | None, str]]]) -> str:
        key = tuple((name, tuple(sorted(labels.items(), key=str))) for name, labels in choices)
        if key in self.known:
            return self.known[key]
        used = set(self.known.values())
        name, n = wanted, 1
        while name in used:
            n += 1
            name = f"{wanted}_{n}"
        self.known[key] = name
        for choice, labels in choices:
            self.rows.append({"list_name": name, "name": choice, "labels": labels})
        return name


def _choice_names(labels: list[str]) -> list[str]:
    names: list[str] = []
    for i, label in enumerate(labels):
        slug = _SLUG.sub("_", label.lower()).strip("_")
        if not slug or not _XML_NAME.fullmatch(slug) or slug in names:
            slug = f"option_{i + 1}"
        while slug in names:
            slug += "_"
        names.append(slug)
    return names


def _write(sheet: Any, headers: list[str], rows: list[dict[str, Any]]) -> None:
    sheet.append(headers)
    for row in rows:
        values = [row.get(header) for header in headers]
        sheet.append(values)
    for cells in sheet.iter_rows(min_row=2):
        for cell in cells:
            if isinstance(cell.value, str) and cell.value.startswith("="):
                cell.data_type = "s"  # a label, never a spreadsheet formula


def export_xlsform(survey: Survey) -> bytes:
    """The survey as an .xlsx XLSForm that imports back to the same resolved survey."""
    from openpyxl import Workbook  # heavy: only when a form is written

    doc = survey.to_dict()
    tag = doc.get("language")
    translations: dict[str, Any] = doc.get("translations") or {}
    default = None if tag is None else language_title(tag)
    others = [(t, language_title(t)) for t in translations]
    languages: list[str | None] = [default, *(name for _, name in others)]
    lists = _Lists()
    values: dict[str, dict[str, str]] = {}  # question -> deniable value -> choice name
    rows: list[dict[str, Any]] = []
    taken = {q["id"] for q in doc["questions"]}
    params: list[str] = []
    for question in doc["questions"]:
        qid = question["id"]
        if not _XML_NAME.fullmatch(qid):
            raise XLSFormError(
                f"question {qid!r}: an XLSForm name starts with a letter or '_', so this "
                "survey cannot be written as an XLSForm"
            )
        local = {t: translations[t].get("questions", {}).get(qid, {}) for t in translations}
        if question.get("note") is not None:
            name, n = f"{qid}_note", 1
            while name in taken:
                n += 1
                name = f"{qid}_note{n}"
            taken.add(name)
            note = {"type": "note", "name": name, column_name("label", default): question["note"]}
            for t, language in others:
                note[column_name("label", language)] = local[t].get("note")
            rows.append(note)
        row: dict[str, Any] = {"name": qid, column_name("label", default): question["text"]}
        if question.get("hint") is not None:
            row[column_name("hint", default)] = question["hint"]
        for t, language in others:
            row[column_name("label", language)] = local[t].get("text")
            if local[t].get("hint") is not None:
                row[column_name("hint", language)] = local[t]["hint"]
        kind = QUESTION_TYPES[question["type"]]
        if kind.labelled:  # a select: its options are the choices of a list
            options = question["options"]
            if kind.xlsform_choices is not None:  # fixed names (yes, no), in their order
                names = list(options)
                wanted = "_".join(kind.xlsform_choices)
            else:
                names = _choice_names(options)
                if sorted(names) == sorted(BINARY_OPTIONS):  # else it would come back binary
                    names = [f"option_{i + 1}" for i in range(len(names))]
                wanted = qid
            choices = []
            for i, choice in enumerate(names):
                labels: dict[str | None, str] = {default: options[i]}
                for t, language in others:
                    translated = local[t].get("options") or options
                    labels[language] = translated[i]
                choices.append((choice, labels))
            if kind.xlsform_choices is not None:
                choices.sort(key=lambda c: kind.xlsform_choices.index(c[0]))  # type: ignore[union-attr]
            list_name = lists.add(wanted, choices)
            row["type"] = f"{kind.xlsform_type} {list_name}"
            values[qid] = dict(zip(options, names, strict=True))
        else:
            row["type"] = kind.xlsform_type
        if question.get("min") is not None:  # a range: the constraint imports it back
            row["constraint"] = f". >= {question['min']} and . <= {question['max']}"
        if question.get("relevant"):
            tree = conditions.parse(question["relevant"]).tree
            row["relevant"] = relevance.to_xlsform(
                tree, lambda q, value: values.get(q, {}).get(value, value)
            )
        row["required"] = "yes"
        mechanism = question["mechanism"]
        row["deniable::mechanism"] = mechanism
        if question.get("epsilon") is not None:
            row["deniable::epsilon"] = float(f"{question['epsilon']:.6g}")
        for key, value in (question.get(mechanism) or {}).items():
            column = f"deniable::{key}"
            if column not in params:
                params.append(column)
            row[column] = value if isinstance(value, int) else str(value)
        if question.get("candidates"):
            row["deniable::candidates"] = "\n".join(question["candidates"])
        rows.append(row)
    headers = ["type", "name"]
    headers += [column_name("label", language) for language in languages]
    if any(column_name("hint", language) in row for row in rows for language in languages):
        headers += [column_name("hint", language) for language in languages]
    for optional in ("relevant", "constraint"):
        if any(optional in row for row in rows):
            headers.append(optional)
    headers += ["required", "deniable::mechanism", "deniable::epsilon", *sorted(params)]
    if any("deniable::candidates" in row for row in rows):
        headers.append("deniable::candidates")

    workbook = Workbook()
    survey_sheet = workbook.active
    survey_sheet.title = "survey"
    _write(survey_sheet, headers, rows)
    choice_headers = ["list_name", "name"] + [column_name("label", lang) for lang in languages]
    choice_rows = [
        {
            "list_name": entry["list_name"],
            "name": entry["name"],
            **{column_name("label", lang): text for lang, text in entry["labels"].items()},
        }
        for entry in lists.rows
    ]
    _write(workbook.create_sheet("choices"), choice_headers, choice_rows)
    settings: dict[str, Any] = {"form_id": doc["id"], "form_title": doc["title"]}
    for t, language in others:
        settings[column_name("form_title", language)] = translations[t].get("title")
    if default is not None:
        settings["default_language"] = default
    if doc.get("description") is not None:
        settings["deniable::description"] = doc["description"]
        for t, language in others:
            text = translations[t].get("description")
            settings[column_name("deniable::description", language)] = text
    settings["deniable::enrollment"] = doc["enrollment"]
    for key in ("closes_at", "device"):
        if doc.get(key) is not None:
            settings[f"deniable::{key}"] = doc[key]
    if doc.get("design") is not None:
        settings["deniable::design"] = canonical_json(doc["design"]).decode("utf-8")
    _write(workbook.create_sheet("settings"), list(settings), [settings])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()
