"""Reading an XLSForm workbook within documented bounds (docs/xlsform.md#limits).

An .xlsx file is a zip of XML files, so the checks come before any parsing: the file's size,
then the zip's members (how many, and their uncompressed size, counted while they are inflated
so a member that lies about its size cannot go further), then each sheet's rows and columns as
they stream. What openpyxl and pyxform then read is the re-packed copy of exactly the bytes
that were counted. pyxform's own reading (its header and cell cleaning) gives the rows, and its
`workbook_to_json` checks the form as ODK would; its errors become one line.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any

from deniable.shared.errors import SurveyError
from deniable.shared.questions import MAX_OPTIONS
from deniable.shared.survey import MAX_QUESTIONS

#: The largest XLSForm file taken (bytes): a form of MAX_QUESTIONS questions in a few
#: languages is well under 100 KiB.
MAX_FORM_BYTES = 5 * 1024 * 1024
#: The most bytes the workbook's members may hold once inflated (a zip bomb stops here).
MAX_UNPACKED_BYTES = 32 * 1024 * 1024
#: The most members (files) in the workbook's zip.
MAX_MEMBERS = 200
#: Rows of the survey sheet that hold something: a question, the note before it and a group's
#: begin and end rows for each of MAX_QUESTIONS questions.
MAX_SURVEY_ROWS = 4 * MAX_QUESTIONS
#: Rows of the choices sheet: every question a list of MAX_OPTIONS choices.
MAX_CHOICE_ROWS = MAX_QUESTIONS * MAX_OPTIONS
#: Columns of any sheet (a label and a hint column per language leaves room for many).
MAX_COLUMNS = 200
#: Rows of the settings sheet (ODK reads the first).
MAX_SETTINGS_ROWS = 1
#: Empty rows in a row that end a sheet, as pyxform stops.
EMPTY_RUN = 60
#: The sheets deniable reads; pyxform's other sheets are refused (docs/xlsform.md).
SHEETS = ("survey", "choices", "settings")
REFUSED_SHEETS = ("external_choices", "entities", "osm")
_ROW_LIMITS = {"survey": MAX_SURVEY_ROWS, "choices": MAX_CHOICE_ROWS}
_DTD = re.compile(rb"<!DOCTYPE|<!ENTITY", re.IGNORECASE)
_CHUNK = 64 * 1024
_PYXFORM_ROW = re.compile(r"\[row\s*:\s*(\d+)\]\s*")


class XLSFormError(SurveyError):
    """An XLSForm deniable cannot read or honour; the message names the sheet and row."""


@dataclass
class Sheet:
    """One sheet's header and rows: `rows[i]` is spreadsheet row i + 2 (an empty dict for an
    empty row, so row numbers stay right), each a column -> text mapping as pyxform reads."""

    name: str
    headers: list[str]
    rows: list[dict[str, str]] = field(default_factory=list)

    def numbered(self) -> list[tuple[int, dict[str, str]]]:
        """(spreadsheet row number, row) for each row that holds something."""
        return [(i + 2, row) for i, row in enumerate(self.rows) if row]


@dataclass
class Book:
    """The sheets deniable reads (absent ones are missing from `sheets`)."""

    sheets: dict[str, Sheet]
    sheet_names: list[str]

    def sheet(self, name: str) -> Sheet:
        """The sheet `name`, or an empty one when the workbook has none."""
        return self.sheets.get(name) or Sheet(name, [])


def unpack(data: bytes) -> bytes:
    """The workbook re-packed (stored, not compressed) from exactly the bytes counted against
    MAX_UNPACKED_BYTES; XLSFormError if the file is too large, not a zip, or a bomb."""
    if len(data) > MAX_FORM_BYTES:
        raise XLSFormError(
            f"the file has {len(data):,} bytes; an XLSForm may have at most {MAX_FORM_BYTES:,} "
            "(a form of 100 questions is far smaller)"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as source:
            infos = source.infolist()
            if len(infos) > MAX_MEMBERS:
                raise XLSFormError(
                    f"the workbook holds {len(infos)} files; an .xlsx XLSForm holds far fewer "
                    f"(at most {MAX_MEMBERS})"
                )
            declared = sum(info.file_size for info in infos)
            if declared > MAX_UNPACKED_BYTES:
                raise _too_big(declared)
            out = io.BytesIO()
            total = 0
            with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as clean:
                for info in infos:
                    if info.is_dir():
                        continue
                    parts = []
                    with source.open(info) as member:  # inflates at most _CHUNK at a time
                        while chunk := member.read(_CHUNK):
                            total += len(chunk)
                            if total > MAX_UNPACKED_BYTES:
                                raise _too_big(total)
                            parts.append(chunk)
                    body = b"".join(parts)
                    if info.filename.endswith((".xml", ".rels")) and _DTD.search(body):
                        raise XLSFormError(
                            f"the workbook's {info.filename} declares a DTD or entities, which "
                            "no spreadsheet needs; save the form again from a spreadsheet program"
                        )
                    clean.writestr(info.filename, body)
    except XLSFormError:
        raise
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        NotImplementedError,
        RuntimeError,
        ValueError,
        OSError,
    ) as exc:
        raise XLSFormError(
            f"not an .xlsx workbook ({_one_line(str(exc)) or type(exc).__name__}); save the form "
            "as Excel .xlsx"
        ) from None
    return out.getvalue()


def _too_big(size: int) -> XLSFormError:
    return XLSFormError(
        f"the workbook unpacks to more than {MAX_UNPACKED_BYTES:,} bytes ({size:,} or more); "
        "an XLSForm is far smaller: check the file"
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def read_book(data: bytes) -> Book:
    """The survey, choices and settings sheets of an .xlsx XLSForm, read within the limits."""
    from openpyxl import load_workbook  # heavy: only when a form is read

    clean = unpack(data)
    try:
        workbook = load_workbook(io.BytesIO(clean), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds on a damaged file: one line each
        raise XLSFormError(
            f"not a readable .xlsx workbook ({type(exc).__name__}: {_one_line(str(exc))[:200]}); "
            "save the form as Excel .xlsx"
        ) from None
    try:
        names = list(workbook.sheetnames)
        sheets: dict[str, Sheet] = {}
        for original in names:
            name = original.lower()
            if name in REFUSED_SHEETS:
                raise XLSFormError(
                    f"{original} sheet: deniable cannot honour {name} (its answers come from "
                    "no other list or dataset); remove the sheet (docs/xlsform.md)"
                )
            if name not in SHEETS and len(names) == 1:
                name = "survey"  # as pyxform: a workbook of one sheet is the survey
            if name in SHEETS:
                try:
                    sheets[name] = _read_sheet(workbook[original], name)
                except XLSFormError:
                    raise
                except Exception as exc:  # a read-only sheet is parsed now, as it is read
                    raise XLSFormError(
                        f"{original} sheet: not readable ({type(exc).__name__}: "
                        f"{_one_line(str(exc))[:200]}); save the form again as Excel .xlsx"
                    ) from None
        return Book(sheets, names)
    finally:
        workbook.close()


def _read_sheet(worksheet: Any, name: str) -> Sheet:
    """One sheet's rows through pyxform's header and cell cleaning, stopping at the limits."""
    from pyxform.errors import PyXFormError
    from pyxform.xls2json_backends import get_excel_column_headers, xlsx_value_to_str

    rows_iter = worksheet.iter_rows(max_col=MAX_COLUMNS + 1)
    first = next(rows_iter, ())
    raw_headers = [cell.value for cell in first]
    if len(raw_headers) > MAX_COLUMNS and any(
        v not in (None, "") for v in raw_headers[MAX_COLUMNS:]
    ):
        raise XLSFormError(f"{name} sheet: more than {MAX_COLUMNS} columns; remove unused ones")
    try:
        headers = get_excel_column_headers(
            str(v) if v is not None and not isinstance(v, str) else v for v in raw_headers
        )
    except PyXFormError as exc:
        raise XLSFormError(f"{name} sheet: {_one_line(str(exc))}") from None
    limit = _ROW_LIMITS.get(name, MAX_SETTINGS_ROWS)
    sheet = Sheet(name, [h for h in headers if h is not None])
    filled = 0
    empty_run = 0
    for number, cells in enumerate(rows_iter, start=2):
        row: dict[str, str] = {}
        for header, cell in zip(headers, cells, strict=False):
            value = cell.value
            if header is None or value is None:
                continue
            if isinstance(value, str):
                value = value.strip()
                if not value:
                    continue
            row[header] = xlsx_value_to_str(value)
        if not row:
            empty_run += 1
            if empty_run > EMPTY_RUN:
                break
            sheet.rows.append(row)
            continue
        empty_run = 0
        filled += 1
        if filled > limit:
            raise XLSFormError(
                f"{name} sheet, row {number}: more than {limit} rows; "
                + (
                    "ODK reads one row of settings; remove the others"
                    if name == "settings"
                    else f"a survey has at most {MAX_QUESTIONS} questions (docs/xlsform.md)"
                )
            )
        sheet.rows.append(row)
    while sheet.rows and not sheet.rows[-1]:
        sheet.rows.pop()
    return sheet


def check_with_pyxform(book: Book, form_name: str) -> None:
    """pyxform's own checks of the form (as ODK converts it); XLSFormError on any refusal."""
    from pyxform.errors import PyXFormError
    from pyxform.xls2json import workbook_to_json
    from pyxform.xls2json_backends import DefinitionData

    parts: dict[str, Any] = {"sheet_names": book.sheet_names}
    for name, sheet in book.sheets.items():
        parts[name] = [dict(row) for row in sheet.rows]
        parts[f"{name}_header"] = [{h: None for h in sheet.headers}] if sheet.headers else []
    try:
        workbook_to_json(
            DefinitionData(**parts), form_name=None, fallback_form_name=form_name, warnings=[]
        )
    except PyXFormError as exc:
        said = _one_line(str(exc))
        row = _PYXFORM_ROW.match(said)
        if row is not None:
            sheet = "choices" if "choices" in said.lower() else "survey"
            said = f"{sheet} sheet, row {row.group(1)}: {said[row.end() :]}"
        raise XLSFormError(f"{said} (pyxform, as ODK reads the form)") from None
    except Exception as exc:  # a pyxform crash on odd input is still the form's problem
        raise XLSFormError(
            f"pyxform could not read the form ({type(exc).__name__}: {_one_line(str(exc))[:200]})"
        ) from None
