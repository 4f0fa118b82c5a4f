"""Text that others supplied (a server's survey, a stored label), made safe to print on a
terminal: what a terminal would act on rather than show is written as a visible escape."""

from __future__ import annotations

import json
import unicodedata

#: Unicode categories a terminal acts on rather than shows: controls (C0, DEL, C1 such as
#: U+009B, which starts an escape sequence), line and paragraph separators, surrogates,
#: private use and unassigned code points.
_HIDDEN = frozenset({"Cc", "Zl", "Zp", "Cs", "Co", "Cn"})

#: Format characters that reorder or hide the rest of a line (bidi embeddings, overrides and
#: isolates, U+202A-U+202E and U+2066-U+2069, and the like). The other format characters
#: stay: joiners (U+200C, U+200D) and direction marks (U+200E, U+200F, U+061C) are part of
#: ordinary Persian, Arabic or Hindi text and cannot move text they do not belong to.
_KEPT_FORMAT = frozenset("\u200c\u200d\u200e\u200f\u061c\u00ad")


def shown(text: str, *, lines: bool = False) -> str:
    """`text` with every character a terminal would act on written as a visible escape
    (\\u202e), so it can neither hide, reorder nor rewrite what is printed around it; with
    `lines`, newlines stay (a multi-line summary), every other control is escaped."""
    if text.isprintable():  # the common case: nothing to escape (isprintable is stricter)
        return text
    if lines:
        return "\n".join(shown(line) for line in text.split("\n"))
    return "".join(_escape(ch) if _hidden(ch) else ch for ch in text)


def shown_json(text: str) -> str:
    """JSON text (json.dumps with ensure_ascii=False) with every character a terminal would
    act on written as its JSON escape (\\u202e, or a surrogate pair): the same document,
    safe to print. Outside its strings JSON has only printable ASCII and line breaks."""
    return "".join(json.dumps(ch)[1:-1] if ch != "\n" and _hidden(ch) else ch for ch in text)


def _hidden(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category in _HIDDEN or (category == "Cf" and ch not in _KEPT_FORMAT)


def _escape(ch: str) -> str:
    return f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}"
