"""Legacy Excel 97-2003 `.xls` XLSForms, read with xlrd as pyxform reads them
(docs/xlsform.md#limits).

An .xls file is one OLE2 compound file of binary records, never a zip: its size is the first
bound (MAX_FORM_BYTES, checked by the caller before this module sees it). xlrd reads it without
formatting and with ragged rows (a lone far cell never pads every row to its width); before it
parses any sheet, the workbook's records are counted (MAX_XLS_CELLS), so a file packed with
cells is refused at a glance; only the sheets deniable reads are parsed (on demand), and each
stops at the same row and column limits as an .xlsx sheet, every cell at most MAX_CELL_CHARS
characters. Cells become text through pyxform's own `xls_value_to_unicode`, so numbers and
dates read as ODK reads them.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from typing import Any

from deniable.aggregator.forms.workbook import (
    MAX_COLUMNS,
    REFUSED_SHEETS,
    SHEETS,
    Book,
    Sheet,
    XLSFormError,
    gathered,
)
from deniable.aggregator.forms.xmlguard import MAX_CELL_CHARS

#: The magic number that starts every OLE2 compound file (an .xls workbook).
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
#: Cells (with a value) in the whole workbook: a survey of 100 questions of 256 options, every
#: label in four languages, holds about 180,000.
MAX_XLS_CELLS = 200_000
#: BIFF records of one cell each (NUMBER, RK, LABELSST, LABEL, BOOLERR, FORMULA, RSTRING...).
_CELL_RECORDS = frozenset({0x0203, 0x027E, 0x00FD, 0x0204, 0x0205, 0x0006, 0x0406, 0x00D6})
_MULRK = 0x00BD  # several RK cells: a column pair, then 6 bytes a cell
_HLINK = 0x01B8  # a hyperlink over a range of cells
#: XF, FORMAT, FONT and NAME records: xlrd builds an object for each.
_FORMAT_RECORDS = frozenset({0x00E0, 0x041E, 0x0031, 0x0231, 0x0018})
#: Hyperlinks an .xls XLSForm may hold (xlrd builds a long string for each).
MAX_XLS_LINKS = 100
#: Cell formats, fonts and names an .xls XLSForm may hold (as MAX_CELL_FORMATS for .xlsx).
MAX_XLS_FORMATS = 64_000


def is_xls(data: bytes) -> bool:
    """Whether the bytes are an OLE2 compound file (a legacy .xls workbook)."""
    return data[: len(OLE2_MAGIC)] == OLE2_MAGIC


def _one_line(text: str) -> str:
    return " ".join(text.split())


def read_xls(data: bytes) -> Book:
    """The survey, choices and settings sheets of an .xls XLSForm, read within the limits."""
    import xlrd

    try:
        book = xlrd.open_workbook(
            file_contents=data,
            on_demand=True,
            ragged_rows=True,
            formatting_info=False,
            logfile=io.StringIO(),
        )
    except Exception as exc:  # xlrd raises many kinds on a damaged file: one line each
        raise XLSFormError(
            f"not a readable .xls workbook ({type(exc).__name__}: {_one_line(str(exc))[:200]}); "
            "save the form as Excel .xlsx"
        ) from None
    try:
        _count_cells(book)
        _pyxform_reading()
        names = list(book.sheet_names())
        sheets: dict[str, Sheet] = {}
        for index, original in enumerate(names):
            name = original.strip().lower()
            if name in REFUSED_SHEETS:
                continue  # read by nothing deniable keeps (docs/xlsform.md)
            if name not in SHEETS and len(names) == 1:
                name = "survey"  # as pyxform: a workbook of one sheet is the survey
            if name in SHEETS and name not in sheets:
                try:
                    sheets[name] = _read_sheet(book, book.sheet_by_index(index), name)
                except XLSFormError:
                    raise
                except Exception as exc:
                    raise XLSFormError(
                        f"{original} sheet: not readable ({type(exc).__name__}: "
                        f"{_one_line(str(exc))[:200]}); save the form again as Excel .xlsx"
                    ) from None
        return Book(sheets, names)
    finally:
        book.release_resources()


def _pyxform_reading() -> None:
    """pyxform's cell reading, bound once (it is called for every cell)."""
    global _as_text, _PyXFormError
    from pyxform.errors import PyXFormError
    from pyxform.xls2json_backends import xls_value_to_unicode

    _as_text, _PyXFormError = xls_value_to_unicode, PyXFormError


_as_text: Any = None
_PyXFormError: Any = Exception


def _count_cells(book: Any) -> None:
    """XLSFormError when the workbook's stream holds more than MAX_XLS_CELLS cells, counted from
    its record headers alone (a linear pass over at most MAX_FORM_BYTES)."""
    mem, position, end = book.mem, book.base, book.base + book.stream_len
    cells = links = linked = formats = 0
    while position + 4 <= end:
        code, length = struct.unpack_from("<HH", mem, position)
        if code in _CELL_RECORDS:
            cells += 1
        elif code == _MULRK and length >= 6:
            cells += (length - 6) // 6
        elif code == _HLINK:
            # xlrd keeps an entry per cell of a hyperlink's range, and a long string per link.
            links += 1
            if length >= 8 and position + 12 <= end:
                first_row, last_row, first_col, last_col = struct.unpack_from(
                    "<HHHH", mem, position + 4
                )
                linked += max(0, last_row - first_row + 1) * max(0, last_col - first_col + 1)
        elif code in _FORMAT_RECORDS:
            formats += 1
        if cells > MAX_XLS_CELLS or linked > MAX_XLS_CELLS:
            raise XLSFormError(
                f"the workbook holds more than {MAX_XLS_CELLS:,} cells; an XLSForm of 100 "
                "questions of 256 options holds fewer (docs/xlsform.md#limits)"
            )
        if links > MAX_XLS_LINKS or formats > MAX_XLS_FORMATS:
            raise XLSFormError(
                f"the workbook holds more than {MAX_XLS_LINKS} hyperlinks or "
                f"{MAX_XLS_FORMATS:,} cell formats, which no XLSForm needs; save it again as "
                ".xlsx (docs/xlsform.md#limits)"
            )
        position += 4 + length


def _cell_text(book: Any, sheet: str, cell: Any, row: int, header: str) -> str | None:
    value = cell.value
    if isinstance(value, str):
        value = value.strip()
        if not value:
            return None
    elif value is None or value == "":
        return None
    try:
        text = _as_text(value, cell.ctype, book.datemode)
    except _PyXFormError as exc:
        raise XLSFormError(f"{sheet} sheet, row {row}, column {header!r}: {exc}") from None
    except Exception:
        raise XLSFormError(
            f"{sheet} sheet, row {row}, column {header!r}: a date Excel cannot say; write it "
            "as text"
        ) from None
    if len(text) > MAX_CELL_CHARS:
        raise XLSFormError(
            f"{sheet} sheet, row {row}, column {header!r}: {len(text):,} characters; a cell "
            f"holds at most {MAX_CELL_CHARS:,}"
        )
    return text


def _read_sheet(book: Any, worksheet: Any, name: str) -> Sheet:
    """One sheet's rows through pyxform's header cleaning, stopping at the limits."""
    from pyxform.errors import PyXFormError
    from pyxform.xls2json_backends import get_excel_column_headers

    if worksheet.nrows == 0:
        return Sheet(name, [])
    first = worksheet.row(0)
    raw = [c.value for c in first[: MAX_COLUMNS + 1]]
    if len(raw) > MAX_COLUMNS and any(v not in (None, "") for v in raw[MAX_COLUMNS:]):
        raise XLSFormError(f"{name} sheet: more than {MAX_COLUMNS} columns; remove unused ones")
    texts = []
    for value in raw[:MAX_COLUMNS]:
        text = value if isinstance(value, str) else ("" if value in (None, "") else str(value))
        if len(text) > MAX_CELL_CHARS:
            raise XLSFormError(f"{name} sheet, row 1: a header of {len(text):,} characters")
        texts.append(text)
    try:
        headers = get_excel_column_headers(texts)
    except PyXFormError as exc:
        raise XLSFormError(f"{name} sheet: {_one_line(str(exc))}") from None

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        for index in range(1, worksheet.nrows):
            number = index + 1
            row: dict[str, str] = {}
            for header, cell in zip(headers, worksheet.row(index), strict=False):
                if header is None:
                    continue
                text = _cell_text(book, name, cell, number, header)
                if text is not None:
                    row[header] = text
            yield number, row

    return gathered(name, headers, rows())
