"""Text that others supplied, made safe to print on an operator's terminal."""

from __future__ import annotations

import unicodedata

#: Unicode categories a terminal acts on rather than shows: controls (C0, DEL, C1 such as
#: U+009B, which starts an escape sequence), format characters (bidi overrides such as U+202E
#: that reorder the rest of the line), line and paragraph separators, surrogates, private use.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def shown(text: str) -> str:
    """`text` with every character a terminal would act on written as a visible escape
    (\\u202e), so a value can neither hide, reorder nor rewrite what is printed around it."""
    if text.isprintable():  # the common case: nothing to escape (isprintable is stricter)
        return text
    return "".join(_escape(ch) if unicodedata.category(ch) in _HIDDEN else ch for ch in text)


def _escape(ch: str) -> str:
    return f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}"
