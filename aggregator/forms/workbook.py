"""Reading an XLSForm workbook within documented bounds (docs/xlsform.md#limits).

An .xlsx file is a zip of XML files, so the checks come before any parsing: the file's size,
then the zip's members (how many, and their uncompressed size, counted while they are inflated
so a member that lies about its size cannot go further), then the XML of each part openpyxl
would read, streamed by expat within the limits of `xmlguard` (elements, cells per row,
characters per cell, UTF-8, no DTD), then each sheet's rows and columns. What openpyxl and
pyxform then read is a re-packed copy of those parts, cut to what gives the cells' values
(themes, document properties, drawings and the stylesheet are never parsed). pyxform's own
reading (its header and cell cleaning) gives the rows, and its `workbook_to_json` checks the
form as ODK would; its errors become one line.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from deniable.aggregator.forms import xmlguard
from deniable.aggregator.forms.xmlguard import MAX_CELL_CHARS
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
#: The sheets deniable reads; pyxform's other sheets (REFUSED_SHEETS) serve only rows deniable
#: cannot honour, and are not read (docs/xlsform.md).
SHEETS = ("survey", "choices", "settings")
REFUSED_SHEETS = ("external_choices", "entities", "osm")
_ROW_LIMITS = {"survey": MAX_SURVEY_ROWS, "choices": MAX_CHOICE_ROWS}
_CHUNK = 64 * 1024
#: The signature that starts each file's entry in a zip's central directory: counted in the
#: bytes, it bounds the entries zipfile would build an object for before any is counted.
_CENTRAL_ENTRY = b"PK\x01\x02"
_PYXFORM_ROW = re.compile(r"\[row\s*:\s*(\d+)\]\s*")


class XLSFormError(SurveyError):
    """An XLSForm deniable cannot read or honour: `problems` has one line per problem, each
    naming its sheet, row and column (the message is those lines), and `notices` what the
    import would have left out or changed (docs/xlsform.md)."""

    def __init__(self, problems: str | list[str], notices: list[str] | None = None) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.notices = list(notices or [])
        super().__init__("\n".join(self.problems))


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
    """The parts of the workbook openpyxl reads, re-packed (stored, not compressed): inflated
    within MAX_UNPACKED_BYTES, streamed within xmlguard's limits and cut to what gives the cells'
    values; XLSFormError if the file is too large, not a zip, a bomb, or over a limit."""
    try:
        xmlguard.require_defusedxml()
    except xmlguard.PartError as exc:
        raise XLSFormError(str(exc)) from None
    if len(data) > MAX_FORM_BYTES:
        raise XLSFormError(
            f"the file has {len(data):,} bytes; an XLSForm may have at most {MAX_FORM_BYTES:,} "
            "(a form of 100 questions is far smaller)"
        )
    if data.count(_CENTRAL_ENTRY) > MAX_MEMBERS:  # each file's entry, before zipfile lists them
        raise _too_many_files(f"more than {MAX_MEMBERS}")
    members: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as source:
            infos = source.infolist()
            if len(infos) > MAX_MEMBERS:
                raise _too_many_files(f"{len(infos)}")
            declared = sum(info.file_size for info in infos)
            if declared > MAX_UNPACKED_BYTES:
                raise _too_big(declared)
            total = 0
            for info in infos:
                if info.is_dir():
                    continue
                body = io.BytesIO()  # its bytes once, not chunks and then their join
                with source.open(info) as member:  # inflates at most _CHUNK at a time
                    while chunk := member.read(_CHUNK):
                        total += len(chunk)
                        if total > MAX_UNPACKED_BYTES:
                            raise _too_big(total)
                        body.write(chunk)
                members[info.filename] = body.getvalue()
                del body
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
    roles: dict[str, str] = {}

    def reads(name: str, sheets: int) -> bool:
        """Whether the reader reads sheet `name`; a second sheet of a role is refused (pyxform
        would keep the last, and every one would be read)."""
        role = _role(name, sheets)
        if role is not None and role in roles:
            raise XLSFormError(
                f"the workbook has two {role} sheets, {roles[role]!r} and {name!r}; keep one "
                "(docs/xlsform.md)"
            )
        if role is not None:
            roles[role] = name
        return role is not None

    try:
        package = xmlguard.guard(
            members, reads=reads, empty_run=EMPTY_RUN, rows_kept=MAX_CHOICE_ROWS + 1
        )
    except xmlguard.PartError as exc:
        raise XLSFormError(str(exc)) from None
    del members
    _check_sheets(package.sheets)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as clean:
        for name, body in package.parts.items():
            clean.writestr(name, body)
    return out.getvalue()


def _role(name: str, sheets: int) -> str | None:
    """Which of SHEETS read_book reads a sheet as (None: not read), as pyxform names them."""
    role = name.strip().lower()
    if role not in SHEETS and role not in REFUSED_SHEETS and sheets == 1:
        return "survey"  # as pyxform: a workbook of one sheet is the survey
    return role if role in SHEETS else None


def _check_sheets(sheets: list[xmlguard.Sheet]) -> None:
    """The row and column limits of the sheets deniable reads, from their XML as it streamed, so
    an over-limit sheet is refused before openpyxl reads a cell (`_read_sheet` checks again)."""
    for sheet in sheets:
        name = _role(sheet.name, len(sheets))
        if name is None:
            continue
        limit = _ROW_LIMITS.get(name, MAX_SETTINGS_ROWS)
        if len(sheet.value_rows) > limit:
            raise _too_many_rows(name, sheet.value_rows[limit], limit)
        if sheet.header_width > MAX_COLUMNS:
            raise _too_many_columns(name)


def _too_many_rows(name: str, number: int, limit: int) -> XLSFormError:
    return XLSFormError(
        f"{name} sheet, row {number}: more than {limit} rows; "
        + (
            "ODK reads one row of settings; remove the others"
            if name == "settings"
            else f"a survey has at most {MAX_QUESTIONS} questions (docs/xlsform.md)"
        )
    )


def _too_many_columns(name: str) -> XLSFormError:
    return XLSFormError(f"{name} sheet: more than {MAX_COLUMNS} columns; remove unused ones")


def _too_long(name: str, number: int, column: int, header: str | None, length: int) -> XLSFormError:
    from openpyxl.utils import get_column_letter

    said = f"column {get_column_letter(column)}" + (f" ({header!r})" if header else "")
    return XLSFormError(
        f"{name} sheet, row {number}, {said}: the cell has {length:,} characters; a cell may "
        f"hold at most {MAX_CELL_CHARS:,}: shorten it (docs/xlsform.md#limits)"
    )


def _too_many_files(count: str) -> XLSFormError:
    return XLSFormError(
        f"the workbook holds {count} files; an .xlsx XLSForm holds far fewer (at most "
        f"{MAX_MEMBERS})"
    )


def _too_big(size: int) -> XLSFormError:
    return XLSFormError(
        f"the workbook unpacks to more than {MAX_UNPACKED_BYTES:,} bytes ({size:,} or more); "
        "an XLSForm is far smaller: check the file"
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def read_book(data: bytes) -> Book:
    """The survey, choices and settings sheets of an .xlsx (or legacy .xls) XLSForm, read
    within the limits."""
    from openpyxl import load_workbook  # heavy: only when a form is read

    from deniable.aggregator.forms import legacy

    if len(data) <= MAX_FORM_BYTES and legacy.is_xls(data):
        return legacy.read_xls(data)
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
            name = original.strip().lower()
            if name in REFUSED_SHEETS:
                continue  # read by nothing deniable keeps (docs/xlsform.md)
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
        raise _too_many_columns(name)
    texts = [str(v) if v is not None and not isinstance(v, str) else v for v in raw_headers]
    for column, text in enumerate(texts, start=1):  # again, before pyxform sees a cell
        if text is not None and len(text) > MAX_CELL_CHARS:
            raise _too_long(name, 1, column, None, len(text))
    try:
        headers = get_excel_column_headers(texts)
    except PyXFormError as exc:
        raise XLSFormError(f"{name} sheet: {_one_line(str(exc))}") from None

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        for number, cells in enumerate(rows_iter, start=2):
            yield number, cleaned(number, cells)

    def cleaned(number: int, cells: Any) -> dict[str, str]:
        row: dict[str, str] = {}
        for column, (header, cell) in enumerate(zip(headers, cells, strict=False), start=1):
            value = cell.value
            if header is None or value is None:
                continue
            if isinstance(value, str):
                value = value.strip()
                if not value:
                    continue
                if len(value) > MAX_CELL_CHARS:  # again, before pyxform sees it
                    raise _too_long(name, number, column, header, len(value))
            row[header] = xlsx_value_to_str(value)
        return row

    return gathered(name, headers, rows())


def gathered(
    name: str, headers: Sequence[str | None], rows: Iterable[tuple[int, dict[str, str]]]
) -> Sheet:
    """A sheet of its (row number, cells) as pyxform reads them, .xlsx and .xls alike: it ends
    after EMPTY_RUN empty rows, refuses more filled rows than the sheet's limit (before reading
    the rest) and drops the empty rows at its end."""
    limit = _ROW_LIMITS.get(name, MAX_SETTINGS_ROWS)
    sheet = Sheet(name, [h for h in headers if h is not None])
    filled = empty_run = 0
    for number, row in rows:
        if not row:
            empty_run += 1
            if empty_run > EMPTY_RUN:
                break
            sheet.rows.append(row)
            continue
        empty_run = 0
        filled += 1
        if filled > limit:
            raise _too_many_rows(name, number, limit)
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
