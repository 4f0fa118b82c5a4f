"""Legacy .xls XLSForms (docs/xlsform.md#limits), written by tests/forms/xls.py: read as pyxform
reads them (the same document as the .xlsx of the same cells), and hostile ones refused within
the limits of an .xlsx: cells counted before any sheet is parsed, rows, columns and cell length,
in bounded memory."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import xls
from openpyxl import Workbook

from deniable.aggregator import forms
from deniable.aggregator.forms import XLSFormError, legacy, read_xlsform
from deniable.aggregator.forms.legacy import MAX_XLS_CELLS
from deniable.aggregator.forms.xmlguard import MAX_CELL_CHARS

SURVEY = [
    ["type", "name", "label:English", "label:French", "constraint", "deniable::mechanism"],
    ["integer", "age", "Age?", "Âge ?", ". >= 18 and . <= 99", "none"],
    ["select one from yes_no", "smokes", "Do you smoke?", "Fumez-vous ?", None, None],
]
CHOICES = [
    ["list name", "name", "label:English", "label:French"],
    ["yes_no", "yes", "Yes", "Oui"],
    ["yes_no", "no", "No", "Non"],
]
SETTINGS = [["form_title", "form_id", "deniable::epsilon"], ["Smoking", "smoking", 1.5]]


def xlsx(sheets: dict[str, list[list[object]]]) -> bytes:
    book = Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def refused(data: bytes) -> str:
    with pytest.raises(XLSFormError) as caught:
        read_xlsform(data, filename="form.xls")
    assert len(caught.value.problems) == 1, caught.value.problems
    return caught.value.problems[0]


def test_an_xls_form_reads_as_the_xlsx_of_the_same_cells() -> None:
    sheets = {"survey": SURVEY, "choices": CHOICES, "settings": SETTINGS}
    legacy = read_xlsform(xls.workbook(sheets), filename="smoking.xls")
    modern = read_xlsform(xlsx(sheets), filename="smoking.xlsx")
    assert legacy.document == modern.document and legacy.notices == modern.notices
    doc = legacy.document
    assert doc["id"] == "smoking" and list(doc["translations"]) == ["fr"]
    assert doc["questions"][0]["min"] == 18 and doc["questions"][1]["epsilon"] == 1.5


def test_an_xls_of_more_cells_than_any_form_is_refused_before_its_sheets_are_read() -> None:
    under = xls.workbook({"survey": SURVEY, "choices": xls.mulrk_rows(25_700, 7)})
    assert refused(under).startswith("choices sheet, row 25602: more than 25600 rows")
    over = xls.workbook({"survey": SURVEY, "choices": xls.mulrk_rows(MAX_XLS_CELLS // 7, 7)})
    assert refused(over) == (
        f"the workbook holds more than {MAX_XLS_CELLS:,} cells; an XLSForm of 100 questions of "
        "256 options holds fewer (docs/xlsform.md#limits)"
    )


def test_an_xls_over_the_row_column_and_cell_limits_is_refused_naming_where() -> None:
    rows = [SURVEY[0]] + [["text", f"q{i}", "Q?"] for i in range(forms.MAX_SURVEY_ROWS + 3)]
    assert refused(xls.workbook({"survey": rows})).startswith(
        f"survey sheet, row {forms.MAX_SURVEY_ROWS + 2}: more than {forms.MAX_SURVEY_ROWS} rows"
    )
    wide = [[f"c{i}" for i in range(forms.MAX_COLUMNS + 1)], ["text"]]
    assert refused(xls.workbook({"survey": wide})) == (
        f"survey sheet: more than {forms.MAX_COLUMNS} columns; remove unused ones"
    )
    label = "x" * MAX_CELL_CHARS
    fine = xls.workbook(
        {"survey": [*SURVEY, ["text", "t", label]], "choices": CHOICES, "settings": SETTINGS}
    )
    assert read_xlsform(fine).document["questions"][2]["text"] == label
    long = xls.workbook({"survey": [*SURVEY, ["text", "t", label + "x"]]})
    assert refused(long) == (
        f"survey sheet, row 4, column 'label:English': {MAX_CELL_CHARS + 1:,} characters; a cell "
        f"holds at most {MAX_CELL_CHARS:,}"
    )


def test_a_far_lone_cell_pads_nothing() -> None:
    far = [*SURVEY] + [[] for _ in range(60_000)] + [[None] * 199 + ["far"]]
    doc = read_xlsform(xls.workbook({"survey": far, "choices": CHOICES, "settings": SETTINGS}))
    assert [q["id"] for q in doc.document["questions"]] == ["age", "smokes"]


def test_a_hostile_xls_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """The densest .xls under the cell limit, read in a child process: its peak memory over
    the imports' own stays far under 200 MB (a generous bound; benchmarks print the figure)."""
    dense = tmp_path / "dense.xls"
    dense.write_bytes(xls.workbook({"survey": SURVEY, "choices": xls.mulrk_rows(28_000, 7)}))
    code = textwrap.dedent(
        f"""
        import re
        from deniable.aggregator.forms import XLSFormError, read_xlsform
        import xlrd, pyxform.xls2json, openpyxl  # imported before the baseline
        def peak():
            text = open("/proc/self/status").read()
            return int(re.search(r"VmHWM:\\s+(\\d+)", text).group(1)) // 1024
        data = open({str(dense)!r}, "rb").read()
        before = peak()
        try:
            read_xlsform(data, filename="dense.xls")
        except XLSFormError as exc:
            print(exc.problems[0])
        print(peak() - before)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    said, grown = result.stdout.strip().splitlines()
    assert said.startswith("choices sheet, row 25602: more than 25600 rows")
    assert int(grown) < 200, f"{grown} MB"


def _stream(*records: tuple[int, bytes]) -> object:
    """A stand-in for xlrd's book: only the workbook stream `_count_cells` reads."""
    data = b"".join(struct.pack("<HH", code, len(body)) + body for code, body in records)
    return types.SimpleNamespace(mem=data, base=0, stream_len=len(data))


def test_a_hyperlink_over_a_huge_range_is_refused_before_xlrd_reads_the_sheet() -> None:
    """xlrd keeps an entry per cell of a hyperlink's range: one 5 KB record once cost gigabytes."""
    huge = struct.pack("<HHHH", 0, 65535, 0, 255) + b"\0" * 32
    with pytest.raises(XLSFormError, match="more than"):
        legacy._count_cells(_stream((legacy._HLINK, huge)))
    small = struct.pack("<HHHH", 0, 0, 0, 0) + b"\0" * 32
    legacy._count_cells(_stream(*[(legacy._HLINK, small)] * legacy.MAX_XLS_LINKS))
    with pytest.raises(XLSFormError, match="hyperlinks"):
        legacy._count_cells(_stream(*[(legacy._HLINK, small)] * (legacy.MAX_XLS_LINKS + 1)))


def test_a_workbook_of_format_records_is_refused() -> None:
    xf = (0x00E0, b"\0" * 20)
    with pytest.raises(XLSFormError, match="cell formats"):
        legacy._count_cells(_stream(*[xf] * (legacy.MAX_XLS_FORMATS + 1)))
