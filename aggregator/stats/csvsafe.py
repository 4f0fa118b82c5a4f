"""CSV that spreadsheets open as data: every CSV the aggregator writes goes through here.

A cell that begins with `=`, `+`, `-`, `@`, tab or carriage return is a formula to Excel,
LibreOffice and Google Sheets (`=HYPERLINK(...)`, `@SUM(...)`, `+cmd|...`, `-2+3`), and option
labels, text candidates and ids come from survey documents and respondents. Such a cell is
prefixed with `'` (OWASP, "CSV Injection") unless it is a number as written: `-0.03`,
`-1.5e-05` and `-3` stay numbers. A number is `-`, digits, an optional fraction and exponent,
the form Python writes for ints and floats; a leading `+` is not a number here (our numbers
never carry one, and a spreadsheet reads `+...` as a formula), so a label `+1` stays text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain

#: The characters that start a formula (OWASP's list).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

#: A number as Python writes one (str of an int or a finite float), and nothing else.
_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")

#: What makes a cell need quotes.
_SPECIAL = (",", '"', "\r", "\n")


def csv_cell(value: object) -> str:
    """One cell's text: None is empty, a formula-like text is prefixed with `'`."""
    if value is None:
        return ""
    text = str(value)
    if text.startswith(FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def write_csv(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """A header and rows as CSV text (RFC 4180 quoting, lines end in \\n), every cell through
    `csv_cell`. A cell holding a comma, quote, CR or LF is quoted, so a label's CR cannot end
    a row (the csv module leaves a CR unquoted when lines end in LF)."""
    return "".join(
        ",".join(_quoted(csv_cell(cell)) for cell in row) + "\n" for row in chain([header], rows)
    )


def _quoted(text: str) -> str:
    if any(c in text for c in _SPECIAL):
        return '"' + text.replace('"', '""') + '"'
    return text
