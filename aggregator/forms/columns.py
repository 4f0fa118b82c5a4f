"""What each column of an XLSForm means, read as pyxform reads its headers (docs/xlsform.md).

pyxform splits a header on `::` (or on `:` when no header of the sheet has `::`), matches it
case-insensitively and knows the aliases (`bind:relevant`, `caption`, `list name`, ...); its own
`process_header` does that here too, so `label:English`, `label::English (en)` and
`bind::relevant` mean what they mean to ODK. Each column then gets a `key` saying what deniable
does with it: honours it, ignores it because it only changes how ODK shows or checks a form
(`DISPLAY`, named once in a notice), or cannot honour it on a question it keeps (`UNHONOURED`).
`deniable::` columns never decide how the other headers are split (pyxform would otherwise read
`label:English` unsplit beside them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: What deniable reads from each sheet (keys, languages aside).
HONOURED = {
    "survey": frozenset({"type", "name", "label", "hint", "relevant", "constraint", "required"}),
    "choices": frozenset({"list_name", "name", "label"}),
    "settings": frozenset({"title", "id_string", "default_language"}),
}
#: Columns that only change how ODK shows or checks a form: key -> what they do there.
DISPLAY = {
    "appearance": "how ODK lays out a question",
    "required_message": "the message ODK shows when an answer is missing",
    "constraint_message": "the message ODK shows when a check fails",
    "read_only": "whether ODK lets an answer be changed",
    "guidance_hint": "guidance ODK shows on request or on paper",
    "image": "media ODK shows beside the text (deniable shows the text)",
    "big-image": "media ODK shows beside the text (deniable shows the text)",
    "audio": "media ODK plays beside the text (deniable shows the text)",
    "video": "media ODK plays beside the text (deniable shows the text)",
    "autoplay": "whether ODK plays a question's media",
    "rows": "the height of ODK's text box",
    "parameters": "options of ODK's widgets",
    "no_app_error_string": "a message ODK shows when an app is missing",
    "body": "attributes of ODK's form controls",
    "bind": "attributes of ODK's form model",
    "instance": "attributes of ODK's submission",
    "sms": "how ODK sends a form by SMS",
    "repeat_count": "how often ODK repeats a repeat (repeats are never kept)",
    "required": "whether ODK lets a question go unanswered (deniable asks every question it shows)",
    "constraint": "the checks ODK applies to an answer (deniable checks only an integer's range)",
    "default": "the answer ODK fills in before the respondent answers",
    "choice_filter": "which of a list's choices ODK shows",
}
#: Cells deniable cannot honour on a question it keeps: key -> why.
UNHONOURED = {
    "calculation": "ODK calculates the answer, and deniable asks every answer of the respondent",
    "trigger": "ODK recalculates the answer when another one changes",
    "default": "a default answer on a randomized question would be sent as if answered",
    "choice_filter": "a randomized answer is drawn from every option of its list",
}
#: pyxform's token pairs for the `bind`/`control` attributes deniable reads or names.
_ATTRIBUTES = {
    ("bind", "relevant"): "relevant",
    ("bind", "constraint"): "constraint",
    ("bind", "required"): "required",
    ("bind", "jr:constraintMsg"): "constraint_message",
    ("bind", "jr:requiredMsg"): "required_message",
    ("bind", "readonly"): "read_only",
    ("bind", "calculate"): "calculation",
    ("bind", "jr:noAppErrorString"): "no_app_error_string",
    ("control", "appearance"): "appearance",
    ("control", "jr:count"): "repeat_count",
    ("control", "autoplay"): "autoplay",
    ("control", "rows"): "rows",
}
#: Keys deniable reads in each language (`label::French (fr)`), per sheet; a display column's
#: language (`constraint_message::French`) is ignored with the column.
TRANSLATED = {
    "survey": frozenset({"label", "hint"}),
    "choices": frozenset({"label"}),
    "settings": frozenset({"title", "deniable::description"}),
}
_MEDIA = ("image", "big-image", "audio", "video")


@dataclass(frozen=True)
class Column:
    """One header: its `key` (what it means, see the module's docstring), the language it is
    written in (None: no language given) and the header as the form writes it."""

    header: str
    key: str
    language: str | None
    known: bool = True  # False: none of pyxform's columns (ODK ignores it too)


def _pyxform_columns(sheet: str) -> tuple[dict[str, object], set[str]]:
    from pyxform import aliases
    from pyxform.question import MultipleChoiceQuestion, Option
    from pyxform.survey import Survey

    if sheet == "survey":
        return dict(aliases.survey_header), set(MultipleChoiceQuestion.get_slot_names())
    if sheet == "choices":
        return dict(aliases.list_header), {"list name", *Option.get_slot_names()}
    return dict(aliases.settings_header), set(Survey.get_slot_names())


def _deniable(header: str) -> Column | None:
    """A `deniable::name[::language]` header (any case, spaces around `::` allowed)."""
    parts = [part.strip() for part in header.split("::")]
    if len(parts) < 2 or parts[0].lower() != "deniable" or not parts[1]:
        return None
    language = "::".join(parts[2:]).strip() or None
    return Column(header, f"deniable::{parts[1].lower()}", language)


def _key(sheet: str, tokens: tuple[str, ...]) -> tuple[str, str | None]:
    """(key, language) of pyxform's tokens for a header."""
    head = tokens[0]
    rest = tokens[1:]
    if head in ("bind", "control") and rest:
        key = _ATTRIBUTES.get((head, rest[0]))
        if key is not None:
            return key, (rest[1] if len(rest) > 1 else None)
        return ("body" if head == "control" else "bind"), "::".join(rest)  # one per attribute
    if head == "media" and rest:
        return (rest[0] if rest[0] in _MEDIA else "image"), (rest[1] if len(rest) > 1 else None)
    if head in _MEDIA:
        return head, (rest[0] if rest else None)
    if head == "instance":
        return "instance", "::".join(rest) or None
    if head.startswith("sms_"):
        return "sms", head
    if sheet == "choices" and head == "list name":
        return "list_name", None
    language = rest[0] if rest else None
    return head, language


def read_columns(sheet: str, headers: Iterable[str]) -> list[Column]:
    """Each header of `sheet` with what it means to deniable, in the sheet's order."""
    from pyxform.parsing.sheet_headers import process_header

    headers = list(headers)
    aliases, known = _pyxform_columns(sheet)
    dealiased = {v[0] if isinstance(v, tuple) else v for v in aliases.values()}
    double = any("::" in h for h in headers if _deniable(h) is None)
    found: list[Column] = []
    for header in headers:
        special = _deniable(header)
        if special is not None:
            found.append(special)
            continue
        _, tokens = process_header(header, double, aliases, known)
        if tokens[0] not in known and tokens[0] not in dealiased:
            found.append(Column(header, header, None, known=False))
            continue
        key, language = _key(sheet, tokens)
        found.append(Column(header, key, language))
    return found
