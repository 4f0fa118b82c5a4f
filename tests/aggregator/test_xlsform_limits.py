"""An XLSForm is bounded before any XML parser builds objects (docs/xlsform.md#limits): every
hostile workbook of benchmarks/xlsform_limits.py is refused by the streaming checks with a
message that names the limit and says what to do; parts deniable never reads are left out
unread; ordinary forms read exactly as openpyxl reads them; defusedxml is required."""

from __future__ import annotations

import datetime
import importlib.util
import io
import os
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openpyxl import Workbook, load_workbook
from openpyxl.utils.datetime import CALENDAR_MAC_1904

from deniable.aggregator.forms import XLSFormError, import_xlsform, workbook, xmlguard

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmarks" / "xlsform_limits.py"


def load_benchmark() -> ModuleType:
    """benchmarks/xlsform_limits.py as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("xlsform_limits_benchmark", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = load_benchmark()
MAIN = bench.MAIN


def refused(data: bytes) -> str:
    """The one-line message refusing `data`, checked to come from the streaming checks (unpack,
    before openpyxl reads anything) and to be what the whole import says."""
    with pytest.raises(XLSFormError) as early:
        workbook.unpack(data)
    with pytest.raises(XLSFormError) as caught:
        import_xlsform(data)
    message = str(caught.value)
    assert message == str(early.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def survey_with(*rows: list[Any], data_tail: str = "", tail: str = "") -> bytes:
    """The benchmark's valid form with rows added to its survey sheet."""
    return bench.form(bench.sheet_xml([*bench.SURVEY, *rows], data_tail=data_tail, tail=tail))


def note(cell: str, **parts: bytes) -> bytes:
    """A valid form whose row 3 is a note, `cell` (a <c> of column C) its label, before a
    plain question on row 4 (and `parts` added, as bench.form takes them)."""
    rows = (
        '<row r="3"><c r="A3" t="inlineStr"><is><t>note</t></is></c><c r="B3" t="inlineStr">'
        f'<is><t>n</t></is></c>{cell}</row><row r="4"><c r="A4" t="inlineStr">'
        "<is><t>select_one yes_no</t>"
        '</is></c><c r="B4" t="inlineStr"><is><t>after</t></is></c><c r="C4" t="inlineStr">'
        '<is><t>After?</t></is></c><c r="D4" t="inlineStr"><is><t>none</t></is></c></row>'
    )
    return bench.form(bench.sheet_xml(bench.SURVEY, data_tail=rows), **parts)


def inline(text: str) -> str:
    return f'<c r="C3" t="inlineStr"><is><t>{text}</t></is></c>'


# -- the hostile workbooks -----------------------------------------------------------------------

HOSTILE: dict[str, tuple[Callable[[], bytes], list[str]]] = {
    "styles.xml: a million <xf/> cell formats": (
        bench.million_cell_formats,
        ["cell formats (xl/styles.xml) holds more than 64,000 cell formats", "new workbook"],
    ),
    "styles.xml: a million <xf/> elsewhere": (
        bench.million_style_elements,
        [
            f"holds more than {xmlguard.MAX_ELEMENTS:,} XML elements",
            "cell formats (xl/styles.xml)",
            "new workbook",
        ],
    ),
    "survey: a row of a million empty <c/>": (
        bench.million_cells_in_a_row,
        ["survey sheet, row 3: more than 1,024 cells, empty ones included", "delete the columns"],
    ),
    "sharedStrings: a string of 5,000,000 chars": (
        bench.huge_shared_string,
        ["survey sheet, row 3, column C: the cell has more than 2,000 characters", "shorten it"],
    ),
    "sharedStrings: 2 million strings, 31 MiB": (
        bench.million_shared_strings,
        [
            f"holds more than {xmlguard.MAX_ELEMENTS:,} XML elements",
            "in the workbook's shared strings",
        ],
    ),
    "workbook.xml: UTF-16 entity bomb": (
        bench.utf16_entity_bomb,
        ["xl/workbook.xml is encoded in UTF-16, not UTF-8", "save the form again"],
    ),
    "survey: UTF-8 entity bomb": (
        bench.utf8_entity_bomb,
        ["survey sheet declares a DTD or entities", "save the form again"],
    ),
    "survey: nested a million deep": (
        bench.deep_nesting,
        ["survey sheet nests XML elements more than 64 deep", "save the form again"],
    ),
    "survey: an element of a million attributes": (
        bench.million_attributes,
        ["survey sheet has an element with more than 128 attributes", "save the form again"],
    ),
    "survey: a million unknown elements": (
        bench.million_unknown_elements,
        [
            f"holds more than {xmlguard.MAX_ELEMENTS:,} XML elements",
            "in the survey sheet",
            "new workbook",
        ],
    ),
    "choices: 25,601 rows": (
        bench.too_many_rows,
        ["choices sheet, row 25602: more than 25600 rows"],
    ),
    "choices: full budget, then a long cell": (
        bench.full_budget_then_a_long_cell,
        ["choices sheet, row 16004, column C: the cell has more than 2,000 characters"],
    ),
}


def test_every_hostile_form_of_the_benchmark_is_tested() -> None:
    hostile = {name for name, (_, kind) in bench.FORMS.items() if kind == "hostile"}
    assert hostile == set(HOSTILE)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_workbook_is_refused_while_it_streams(name: str) -> None:
    build, said = HOSTILE[name]
    message = refused(build())
    for part in said:
        assert part in message, message
    assert "docs/xlsform.md" in message or "save the form again" in message


@pytest.mark.parametrize(
    "name",
    [
        "styles.xml: a million <xf/> cell formats",
        "survey: a row of a million empty <c/>",
        "sharedStrings: 2 million strings, 31 MiB",
        "workbook.xml: UTF-16 entity bomb",
    ],
)
def test_a_hostile_workbook_is_refused_in_bounded_memory(name: str) -> None:
    """In a child process of its own: its whole peak (interpreter and modules included) stays
    far below what the findings reached (3.1 GB, 725 MiB)."""
    got = bench.measure(HOSTILE[name][0]())
    assert got["refused"], got
    assert got["peak_mib"] < 400, got


# -- the limits, at their boundaries -------------------------------------------------------------


def test_a_row_of_the_most_cells_is_read_and_one_more_is_refused() -> None:
    row = '<row r="3">' + "<c/>" * xmlguard.MAX_ROW_CELLS + "</row>"
    import_xlsform(survey_with(data_tail=row))
    row = '<row r="3">' + "<c/>" * (xmlguard.MAX_ROW_CELLS + 1) + "</row>"
    assert refused(survey_with(data_tail=row)).startswith("survey sheet, row 3: more than 1,024")


def test_nesting_to_the_limit_is_read_and_one_deeper_is_refused() -> None:
    # worksheet (1) > extLst (2) > x ... : MAX_DEPTH levels in all
    inner = xmlguard.MAX_DEPTH - 2
    import_xlsform(survey_with(tail="<extLst>" + "<x>" * inner + "</x>" * inner + "</extLst>"))
    inner += 1
    message = refused(survey_with(tail="<extLst>" + "<x>" * inner + "</x>" * inner + "</extLst>"))
    assert "more than 64 deep" in message


def test_an_element_of_the_most_attributes_is_read_and_one_more_is_refused() -> None:
    def attributes(count: int) -> str:
        return " ".join(f'a{i}=">"' for i in range(count))  # a '>' in a value hides no tag end

    import_xlsform(survey_with(tail=f"<extLst {attributes(xmlguard.MAX_ELEMENT_ATTRIBUTES)}/>"))
    message = refused(
        survey_with(tail=f"<extLst {attributes(xmlguard.MAX_ELEMENT_ATTRIBUTES + 1)}/>")
    )
    assert "more than 128 attributes" in message


def test_the_element_and_attribute_budgets_span_the_whole_workbook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = bench.form()
    parts = unpacked_counts(data)
    monkeypatch.setattr(xmlguard, "MAX_ELEMENTS", parts["elements"])
    workbook.unpack(data)  # exactly at the budget
    monkeypatch.setattr(xmlguard, "MAX_ELEMENTS", parts["elements"] - 1)
    assert "more than" in refused(data) and "XML elements" in refused(data)
    monkeypatch.setattr(xmlguard, "MAX_ELEMENTS", 10**6)
    monkeypatch.setattr(xmlguard, "MAX_ATTRIBUTES", parts["attributes"] - 1)
    assert "XML attributes" in refused(data)


def unpacked_counts(data: bytes) -> dict[str, int]:
    """Elements and attributes of the parts the guard streams, counted by expat afresh."""
    from xml.parsers import expat

    counts = {"elements": 0, "attributes": 0}
    streamed = ["[Content_Types].xml", "xl/_rels/workbook.xml.rels", "xl/workbook.xml"]
    streamed += [f"xl/worksheets/sheet{i}.xml" for i in (1, 2, 3)]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in streamed:
            parser = expat.ParserCreate(namespace_separator="}")  # xmlns is no attribute

            def start(_name: str, attrs: dict[str, str]) -> None:
                counts["elements"] += 1
                counts["attributes"] += len(attrs)

            parser.StartElementHandler = start
            parser.Parse(archive.read(name), True)
    return counts


def test_the_list_parts_are_bounded_on_their_own() -> None:
    many = "".join(
        f'<Override PartName="/x{i}.xml" ContentType="application/xml"/>'
        for i in range(xmlguard.MAX_LIST_ELEMENTS)
    )
    data = bench.with_parts(bench.form())
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        types = archive.read("[Content_Types].xml").replace(
            b"</Types>", many.encode() + b"</Types>"
        )
    message = refused(bench.with_parts(data, **{"[Content_Types].xml": types}))
    assert "[Content_Types].xml lists more than 10,000 entries" in message


def test_a_cell_of_2000_characters_is_read_and_one_more_is_refused() -> None:
    at_limit = "é" * xmlguard.MAX_CELL_CHARS  # characters, not bytes
    doc = import_xlsform(note(inline(at_limit)))
    assert doc["questions"][1]["note"] == at_limit
    message = refused(note(inline(at_limit + "x")))
    assert message.startswith("survey sheet, row 3, column C: the cell has more than 2,000")


def test_rich_text_counts_its_runs_together_and_its_phonetic_guide_apart() -> None:
    half = "a" * (xmlguard.MAX_CELL_CHARS // 2)
    guide = f'<rPh sb="0" eb="1"><t>{"g" * 1500}</t></rPh>'

    def rich(*runs: str, extra: str = "") -> bytes:
        body = "".join(f"<r><rPr><b/></rPr><t>{run}</t></r>" for run in runs)
        return note(f'<c r="C3" t="inlineStr"><is>{body}{extra}</is></c>')

    doc = import_xlsform(rich(half, half, extra=guide))
    assert doc["questions"][1]["note"] == half + half
    assert "column C: the cell has more than" in refused(rich(half, half + "x"))
    too_rich = "".join("<r><t>a</t></r>" for _ in range(xmlguard.MAX_CELL_ELEMENTS))
    message = refused(rich(extra=too_rich))
    assert "survey sheet, row 3, column C: the cell has more than 200 XML elements" in message


def test_shared_strings_are_bounded_as_cells_are() -> None:
    def strings(*texts: str) -> bytes:
        items = "".join(f"<si><t>{text}</t></si>" for text in texts)
        # an element that is no string comes first: it is cut out, and counts as no string
        return f'<sst xmlns="{MAIN}"><extLst><x/></extLst>{items}</sst>'.encode()

    text = "z" * xmlguard.MAX_CELL_CHARS
    cell = '<c r="C3" t="s"><v>1</v></c>'
    doc = import_xlsform(note(cell, xl__sharedStrings_xml=strings("unused", text)))
    assert doc["questions"][1]["note"] == text
    data = note(cell, xl__sharedStrings_xml=strings("unused", text + "z"))
    assert refused(data).startswith("survey sheet, row 3, column C: the cell has more than 2,000")
    # A long text no cell of a sheet deniable reads uses is refused all the same.
    data = bench.form(xl__sharedStrings_xml=strings("unused", text + "z"))
    assert refused(data).startswith("a text in the workbook (shared string 2, in no sheet deniable")


def test_the_second_check_before_pyxform_names_the_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were the streaming check to let a long cell pass, the sheet reader refuses it before
    pyxform sees it, naming the sheet, row, column and header."""
    monkeypatch.setattr(xmlguard, "MAX_CELL_CHARS", 10**6)
    with pytest.raises(XLSFormError) as caught:
        import_xlsform(note(inline("y" * 2001)))
    assert str(caught.value).startswith(
        "survey sheet, row 3, column C ('label'): the cell has 2,001 characters"
    )


# -- rows and columns are refused before openpyxl reads a cell ------------------------------------


def test_row_and_column_limits_are_checked_while_the_sheets_stream() -> None:
    questions = [["text", f"q{i}", "Q?", "none", None] for i in range(workbook.MAX_SURVEY_ROWS)]
    data = survey_with(*questions[:-1])  # with the gate: MAX_SURVEY_ROWS rows
    workbook.unpack(data)
    message = refused(survey_with(*questions))
    assert message.startswith(f"survey sheet, row {workbook.MAX_SURVEY_ROWS + 2}: more than 400")
    settings = bench.sheet_xml([*bench.SETTINGS, ["again", "Again"]])
    assert refused(bench.form(settings=settings)).startswith("settings sheet, row 3: more than 1")
    wide = bench.sheet_xml([[*bench.SURVEY[0], *[None] * 200, "far"], *bench.SURVEY[1:]])
    assert refused(bench.form(wide)) == "survey sheet: more than 200 columns; remove unused ones"


def test_rows_after_a_long_empty_run_are_not_counted_as_the_reader_stops_there() -> None:
    questions = [["text", f"q{i}", "Q?", "none", None] for i in range(workbook.MAX_SURVEY_ROWS - 1)]
    # the last question is on row MAX_SURVEY_ROWS + 1; then more than EMPTY_RUN empty rows
    far = workbook.MAX_SURVEY_ROWS + 1 + workbook.EMPTY_RUN + 2
    tail = "".join(
        f'<row r="{far + i}"><c r="A{far + i}" t="inlineStr"><is><t>scratch</t></is></c></row>'
        for i in range(10)
    )
    data = survey_with(*questions, data_tail=tail)
    workbook.unpack(data)  # the guard stops counting where the reader stops reading
    rows = workbook.read_book(data).sheet("survey").numbered()
    assert len(rows) == workbook.MAX_SURVEY_ROWS and rows[-1][0] == workbook.MAX_SURVEY_ROWS + 1
    near = tail.replace(f'r="{far}"', f'r="{far - 1}"').replace(f'r="A{far}"', f'r="A{far - 1}"')
    assert refused(survey_with(*questions, data_tail=near)).startswith(
        f"survey sheet, row {far - 1}: more than 400 rows"
    )


# -- what openpyxl reads: the parts it needs, cut to the cells ------------------------------------


def test_parts_deniable_never_reads_are_left_out_unread() -> None:
    bomb = bench.BOMB.format(MAIN)
    data = bench.form(
        docProps__core_xml=b"<not well-formed",
        docProps__app_xml=bomb.encode(),
        xl__theme__theme1_xml=bomb.encode("utf-16"),
        xl__drawings__drawing1_xml=b"<a>" + b"<b/>" * 2_000_000 + b"</a>",
        xl__printerSettings__printerSettings1_bin=os.urandom(1000),
        xl__worksheets___rels__sheet1_xml_rels=bomb.encode(),
        xl__externalLinks__externalLink1_xml=bomb.encode(),
    )
    assert import_xlsform(data)["id"] == "limits"
    with zipfile.ZipFile(io.BytesIO(workbook.unpack(data))) as clean:
        assert sorted(clean.namelist()) == [
            "[Content_Types].xml",
            "xl/_rels/workbook.xml.rels",
            "xl/workbook.xml",
            "xl/worksheets/sheet1.xml",
            "xl/worksheets/sheet2.xml",
            "xl/worksheets/sheet3.xml",
        ]


def test_openpyxl_reads_the_cells_alone_and_our_own_stylesheet() -> None:
    styles = (
        f'<styleSheet xmlns="{MAIN}"><numFmts count="1"><numFmt numFmtId="164" '
        'formatCode="dd/mm/yyyy"/></numFmts><fonts count="1"><font><name val="Evil"/></font>'
        '</fonts><cellXfs count="3"><xf numFmtId="0"/><xf numFmtId="164"/><xf numFmtId="4"/>'
        "</cellXfs></styleSheet>"
    ).encode()
    extra = (
        '<sheetViews><sheetView workbookViewId="0"/></sheetViews><cols><col min="1" max="3" '
        'width="20"/></cols>'
    )
    sheet = bench.sheet_xml(
        bench.SURVEY,
        tail='<!-- a > comment --><mergeCells count="1"><mergeCell ref="A9:B9"/></mergeCells>'
        '<extLst a=">&lt;sheetData&gt;"><x/></extLst>',
    ).replace(b"<sheetData>", extra.encode() + b"<sheetData>")
    book = (
        f'<workbook xmlns="{MAIN}" xmlns:r="{bench.DOC_RELS}"><workbookPr date1904="1"/>'
        '<bookViews><workbookView/></bookViews><sheets><sheet name="survey" sheetId="1" '
        'r:id="rId1"/><sheet name="choices" sheetId="2" r:id="rId2"/><sheet name="settings" '
        'sheetId="3" r:id="rId3"/></sheets><definedNames><definedName name="x">survey!$A$1'
        '</definedName></definedNames><externalReferences><externalReference r:id="rId9"/>'
        "</externalReferences></workbook>"
    ).encode()
    data = bench.with_parts(bench.form(sheet, xl__styles_xml=styles), xl__workbook_xml=book)
    with zipfile.ZipFile(io.BytesIO(workbook.unpack(data))) as clean:
        survey = clean.read("xl/worksheets/sheet1.xml")
        assert b"<sheetData>" in survey and b"<c r=" in survey
        for cut in (b"sheetViews", b"<cols", b"mergeCell", b"extLst"):
            assert cut not in survey
        assert b"a > comment" in survey  # a comment after a kept element stays with it
        ours = clean.read("xl/styles.xml")
        assert b"Evil" not in ours and b"dd/mm/yyyy" not in ours
        assert b'<xf numFmtId="0" ' in ours and b'<xf numFmtId="14" ' in ours
        assert ours.count(b"<xf ") == 3  # cellStyleXfs' one, then up to the last date format
        kept = clean.read("xl/workbook.xml")
        assert b'date1904="1"' in kept and b"<sheets>" in kept
        for cut in (b"definedNames", b"externalReferences", b"bookViews"):
            assert cut not in kept
    assert import_xlsform(data)["id"] == "limits"


def test_sheets_deniable_does_not_read_keep_their_name_and_lose_their_cells() -> None:
    notes = bench.sheet_xml([["x" * 5000], ["<c/>"]], tail="<extLst>" + "<x/>" * 50 + "</extLst>")
    sheets = {
        "survey": bench.sheet_xml(bench.SURVEY),
        "choices": bench.sheet_xml(bench.CHOICES),
        "settings": bench.sheet_xml(bench.SETTINGS),
        "notes": notes,
    }
    data = bench.pack(bench.package(sheets))
    book = workbook.read_book(data)
    assert book.sheet_names == ["survey", "choices", "settings", "notes"]
    with zipfile.ZipFile(io.BytesIO(workbook.unpack(data))) as clean:
        assert b"x" * 100 not in clean.read("xl/worksheets/sheet4.xml")
    assert import_xlsform(data)["id"] == "limits"


def read(data: bytes, *, guarded: bool) -> dict[str, Any] | str:
    """The sheets deniable reads (name -> numbered rows), or the refusal: through the guard
    (read_book), or with openpyxl reading the original workbook whole (no parts left out, its
    own stylesheet) and the same sheet reader, as before the guard."""
    try:
        if guarded:
            book = workbook.read_book(data)
            return {name: sheet.numbered() for name, sheet in book.sheets.items()}
        original = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            names = original.sheetnames
            sheets = {}
            for name in names:
                role = workbook._role(name, len(names))
                if role is not None and role not in sheets:
                    sheets[role] = workbook._read_sheet(original[name], role).numbered()
            return sheets
        finally:
            original.close()
    except XLSFormError as exc:
        return str(exc)


def assert_reads_the_same(data: bytes) -> None:
    assert read(data, guarded=True) == read(data, guarded=False)


REAL = sorted((ROOT / "tests" / "forms" / "real").glob("*.xls[xm]"))


@pytest.mark.filterwarnings("ignore:Unknown extension:UserWarning")  # openpyxl, unguarded
@pytest.mark.parametrize(
    "path", sorted((ROOT / "examples").glob("*.xlsx")) + REAL, ids=lambda path: path.name
)
def test_the_examples_and_real_forms_read_the_same(path: Path) -> None:
    assert_reads_the_same(path.read_bytes())


@pytest.mark.parametrize("epoch", ["1900", "1904"])
def test_numbers_dates_times_and_durations_read_the_same(epoch: str) -> None:
    book = Workbook()
    if epoch == "1904":
        book.epoch = CALENDAR_MAC_1904
    survey = book.active
    survey.title = "survey"
    survey.append(["type", "name", "label", "default", "hint", "constraint"])
    cells: list[tuple[Any, str | None]] = [
        (datetime.datetime(2024, 2, 29, 13, 45), None),
        (datetime.date(1999, 12, 31), None),
        (datetime.time(8, 30), None),
        (datetime.timedelta(hours=30, minutes=5), "[h]:mm"),
        (45000, "dd/mm/yyyy"),  # a number shown as a date reads as one
        (45000, "0.00"),
        (0.25, "0%"),
        (3.0, None),
        (12345678901234, None),
        (True, None),
        ("0012", "@"),
        (45000.5, "yyyy-mm-dd hh:mm"),
    ]
    for i in range(0, len(cells), 4):
        row = ["text", f"q{i}", "Q?", *[None] * 3]
        survey.append(row)
        for j, (value, number_format) in enumerate(cells[i : i + 4]):
            cell = survey.cell(row=survey.max_row, column=3 + j, value=value)
            if number_format:
                cell.number_format = number_format
    choices = book.create_sheet("choices")
    choices.append(["list_name", "name", "label"])
    choices.append(["l", datetime.date(2020, 1, 2), 1.5])
    out = io.BytesIO()
    book.save(out)
    data = out.getvalue()
    assert_reads_the_same(data)
    book_rows = workbook.read_book(data).sheets["survey"].rows
    assert book_rows[0]["label"] == "2024-02-29 13:45:00" and book_rows[0]["hint"] == "08:30:00"


# -- encodings ------------------------------------------------------------------------------------


def with_workbook_part(body: bytes) -> bytes:
    return bench.with_parts(bench.form(), xl__workbook_xml=body)


def workbook_part() -> str:
    with zipfile.ZipFile(io.BytesIO(bench.form())) as archive:
        return archive.read("xl/workbook.xml").decode().split("?>", 1)[1].strip()


@pytest.mark.parametrize(
    ("encoding", "said"),
    [
        ("utf-16", "is encoded in UTF-16, not UTF-8"),
        ("utf-16-be", "is encoded in UTF-16, not UTF-8"),  # no byte order mark
        ("utf-32", "is encoded in UTF-32, not UTF-8"),
    ],
)
def test_parts_in_utf16_or_utf32_are_refused(encoding: str, said: str) -> None:
    body = f'<?xml version="1.0" encoding="{encoding.upper()}"?>{workbook_part()}'
    message = refused(with_workbook_part(body.encode(encoding)))
    assert message.startswith("the workbook's xl/workbook.xml " + said)


def test_an_encoding_declaration_other_than_utf8_is_refused() -> None:
    body = f'<?xml version="1.0" encoding="ISO-8859-1"?>{workbook_part()}'.encode()
    message = refused(with_workbook_part(body))
    assert "declares the encoding 'ISO-8859-1', not UTF-8" in message


def test_bytes_that_are_not_utf8_are_refused_naming_where() -> None:
    body = f'<?xml version="1.0"?>{workbook_part()}'.encode().replace(b"survey", b"surv\xe9y", 1)
    message = refused(with_workbook_part(body))
    assert message.startswith("the workbook's xl/workbook.xml is not UTF-8 (byte ")


def test_utf8_with_or_without_a_declaration_or_byte_order_mark_is_read() -> None:
    for head in ("", '<?xml version="1.0"?>', '<?xml version="1.0" encoding="utf-8"?>'):
        for bom in (b"", b"\xef\xbb\xbf"):
            data = with_workbook_part(bom + (head + workbook_part()).encode())
            assert import_xlsform(data)["id"] == "limits"


# -- defusedxml ----------------------------------------------------------------------------------


def test_defusedxml_is_a_declared_dependency_of_the_aggregator() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    aggregator = project["optional-dependencies"]["aggregator"]
    assert any(spec.startswith("defusedxml") for spec in aggregator)


@pytest.mark.parametrize("how", ["missing", "turned off"])
def test_a_form_is_refused_when_openpyxl_would_parse_without_defusedxml(how: str) -> None:
    env = dict(os.environ)
    block = "import sys; sys.modules['defusedxml'] = None\n" if how == "missing" else ""
    if how == "turned off":
        env["OPENPYXL_DEFUSEDXML"] = "False"
    script = block + (
        "from pathlib import Path\n"
        "from deniable.aggregator.forms import XLSFormError, import_xlsform\n"
        f"data = Path({str(ROOT / 'examples' / 'health-multilingual.xlsx')!r}).read_bytes()\n"
        "try:\n"
        "    import_xlsform(data)\n"
        "except XLSFormError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    said = done.stdout.strip()
    assert said.startswith("this server cannot read XLSForms safely"), done
    assert ("not installed" if how == "missing" else "OPENPYXL_DEFUSEDXML") in said


def test_the_package_constants_are_openpyxls() -> None:
    from openpyxl.xml import constants

    assert xmlguard._WORKBOOK_TYPES == (
        constants.XLTM,
        constants.XLTX,
        constants.XLSM,
        constants.XLSX,
    )
    assert xmlguard._SHARED_STRINGS == constants.SHARED_STRINGS
    assert xmlguard._MAIN == constants.SHEET_MAIN_NS
    assert xmlguard._STYLES == constants.ARC_STYLE
    assert xmlguard._CONTENT_TYPES == constants.CONTYPES_NS
    assert xmlguard._PACKAGE_RELS == constants.PKG_REL_NS
    assert xmlguard._DOCUMENT_RELS == constants.REL_NS


# -- any damage to the XML is refused in one line ------------------------------------------------

TOKENS = [b"<", b">", b'"', b"&", b"/", b"<x>", b"</x>", b"<!DOCTYPE x>", b"\x00", b"\xff", b"\xc3"]
TOKENS += [b"<c/>", b"<row>", b"</row>", b'<c t="s"><v>99</v></c>', b"&amp;", b"]]>", b"<?x?>"]


@pytest.mark.filterwarnings("ignore::UserWarning")  # openpyxl on a damaged sheet list
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_xml_is_read_or_refused_in_one_line(data: st.DataObject) -> None:
    parts = {}
    with zipfile.ZipFile(io.BytesIO(bench.form())) as archive:
        for name in archive.namelist():
            parts[name] = archive.read(name)
    for _ in range(data.draw(st.integers(1, 4))):
        name = data.draw(st.sampled_from(sorted(parts)))
        body = parts[name]
        at = data.draw(st.integers(0, len(body)))
        cut = data.draw(st.integers(0, 3))
        parts[name] = body[:at] + data.draw(st.sampled_from(TOKENS)) + body[at + cut :]
    try:
        import_xlsform(bench.pack(parts))
    except XLSFormError as exc:  # one line per problem, never a traceback
        assert "Traceback" not in str(exc)
        assert all(line.strip() for line in str(exc).split("\n"))


def test_a_piece_of_xml_expat_would_hold_whole_is_bounded() -> None:
    """A comment (or a tag) is parsed only once whole: what waits unparsed is bounded, while
    a long text streams (its cell is refused by its length, naming it)."""
    import_xlsform(survey_with(tail=f"<!-- {'c' * 64 * 1024} -->"))
    message = refused(survey_with(tail=f"<!-- {'c' * (xmlguard.MAX_TOKEN_BYTES + 1)} -->"))
    assert message.startswith("survey sheet has a piece of XML (a tag or a comment) of more than")
    attribute = "x" * (xmlguard.MAX_TOKEN_BYTES + 1)
    assert "a piece of XML" in refused(survey_with(tail=f'<extLst a="{attribute}"/>'))
    text = inline("t" * (4 * xmlguard.MAX_TOKEN_BYTES))
    assert refused(note(text)).startswith("survey sheet, row 3, column C: the cell has more than")
