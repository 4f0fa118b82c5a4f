"""Hostile XLSForms refused before any XML parser builds objects, and the largest forms within
the limits: the time and peak memory of importing each, in a child process of its own.

    python benchmarks/xlsform_limits.py [--only NAME ...] [--list]

Every workbook is built here, part by part (docs/xlsform.md#limits lists the limits it meets):
a million cell formats in xl/styles.xml, a row of a million empty cells, a shared string of
five million characters, two million shared strings (31 MiB), an entity bomb in a UTF-16 part
and in a UTF-8 one, elements nested a million deep, an element of a million attributes, a
million unknown elements in a sheet, 25,601 rows of choices, cells up to the element budget
and then a cell too long (the most streaming before a refusal); a form over a limit checked
only on the values (101 questions) after the most openpyxl reads; then the largest valid form
within the limits (100 questions of 256 options labelled in four languages) and forms that
fill the element budget with what openpyxl still reads (empty cells, unused shared strings).

Each child process imports deniable.aggregator.forms, reads the workbook's bytes from a file,
then times `import_xlsform` on them and reports its peak resident memory (VmHWM, from
/proc/self/status: the whole process, interpreter and modules included, printed beside as
"at start"). Target: every hostile form refused in under 2 s and 200 MB.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
DOC_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
SHEET_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
TIME_TARGET = 2.0  # seconds
MEMORY_TARGET = 200  # MiB
LANGUAGES = ["English (en)", "French (fr)", "Spanish (es)", "Arabic (ar)", "Swahili (sw)"]
LANGUAGES += ["German (de)", "Portuguese (pt)", "Italian (it)", "Dutch (nl)", "Russian (ru)"]
DECLARATION = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
#: A billion laughs: ten entities, each ten of the one before ("{}" takes the namespace).
BOMB = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol0 "lol">'
    + "".join(f'<!ENTITY lol{i} "' + f"&lol{i - 1};" * 10 + '">' for i in range(1, 10))
    + ']><lolz xmlns="{}">&lol9;</lolz>'
)

Cell = str | int | float | None


# -- writing a workbook, part by part -------------------------------------------------------------


def column_letters(number: int) -> str:
    """Column `number` (1 = A) as Excel writes it."""
    letters = ""
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def row_xml(number: int, cells: Iterable[Cell]) -> str:
    """One <row> of inline strings (numbers as numbers; None leaves the cell out)."""
    out = [f'<row r="{number}">']
    for column, value in enumerate(cells, start=1):
        ref = f"{column_letters(column)}{number}"
        if value is None:
            continue
        if isinstance(value, int | float):
            out.append(f'<c r="{ref}"><v>{value}</v></c>')
        else:
            out.append(f'<c r="{ref}" t="inlineStr"><is><t>{escape(value)}</t></is></c>')
    out.append("</row>")
    return "".join(out)


def sheet_xml(rows: Iterable[Iterable[Cell]], *, data_tail: str = "", tail: str = "") -> bytes:
    """A worksheet of `rows` (row 1 first); `data_tail` goes at the end of its sheetData and
    `tail` after it."""
    body = "".join(row_xml(number, cells) for number, cells in enumerate(rows, start=1))
    return (
        DECLARATION
        + f'<worksheet xmlns="{MAIN}" xmlns:r="{DOC_RELS}"><sheetData>{body}{data_tail}'
        f"</sheetData>{tail}</worksheet>".encode()
    )


def package(sheets: dict[str, bytes], **extra: bytes) -> dict[str, bytes]:
    """The parts of an .xlsx holding `sheets` (name -> worksheet XML) and `extra` parts
    (path -> bytes; xl/styles.xml and xl/sharedStrings.xml are listed as such)."""
    names = list(sheets)
    overrides = [
        (
            "/xl/workbook.xml",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
        )
    ]
    overrides += [(f"/xl/worksheets/sheet{i}.xml", SHEET_TYPE) for i in range(1, len(names) + 1)]
    if "xl/sharedStrings.xml" in extra:
        overrides.append(
            (
                "/xl/sharedStrings.xml",
                "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml",
            )
        )
    types = (
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
        + "".join(f'<Override PartName="{p}" ContentType="{t}"/>' for p, t in overrides)
        + "</Types>"
    )
    rels = (
        f'<Relationships xmlns="{PKG_RELS}">'
        + "".join(
            f'<Relationship Id="rId{i}" Type="{DOC_RELS}/worksheet" '
            f'Target="worksheets/sheet{i}.xml"/>'
            for i in range(1, len(names) + 1)
        )
        + f'<Relationship Id="rIdS" Type="{DOC_RELS}/styles" Target="styles.xml"/>'
        + f'<Relationship Id="rIdT" Type="{DOC_RELS}/sharedStrings" Target="sharedStrings.xml"/>'
        + "</Relationships>"
    )
    book = (
        f'<workbook xmlns="{MAIN}" xmlns:r="{DOC_RELS}"><sheets>'
        + "".join(
            f'<sheet name="{escape(name)}" sheetId="{i}" r:id="rId{i}"/>'
            for i, name in enumerate(names, start=1)
        )
        + "</sheets></workbook>"
    )
    root_rels = (
        f'<Relationships xmlns="{PKG_RELS}"><Relationship Id="rId1" '
        f'Type="{DOC_RELS}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
    )
    parts = {
        "[Content_Types].xml": DECLARATION + types.encode(),
        "_rels/.rels": DECLARATION + root_rels.encode(),
        "xl/workbook.xml": DECLARATION + book.encode(),
        "xl/_rels/workbook.xml.rels": DECLARATION + rels.encode(),
    }
    for i, name in enumerate(names, start=1):
        parts[f"xl/worksheets/sheet{i}.xml"] = sheets[name]
    parts.update(extra)
    return parts


def part_path(key: str) -> str:
    """A part's path from a keyword: xl__styles_xml -> xl/styles.xml."""
    return key.replace("__", "/").replace("_xml", ".xml")


def pack(parts: dict[str, bytes]) -> bytes:
    """The .xlsx (a deflated zip) of `parts`."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in parts.items():
            archive.writestr(name, body)
    return out.getvalue()


SURVEY = [
    ["type", "name", "label", "deniable::mechanism", "deniable::epsilon"],
    ["select_one yes_no", "smokes", "Do you smoke?", "rr", 1],
]
CHOICES = [["list_name", "name", "label"], ["yes_no", "yes", "Yes"], ["yes_no", "no", "No"]]
SETTINGS = [["form_id", "form_title"], ["limits", "Limits"]]


def form(
    survey: bytes | None = None,
    *,
    choices: bytes | None = None,
    settings: bytes | None = None,
    **extra: bytes,
) -> bytes:
    """A valid small form (one randomized yes/no question), with any sheet or part replaced."""
    sheets = {
        "survey": survey if survey is not None else sheet_xml(SURVEY),
        "choices": choices if choices is not None else sheet_xml(CHOICES),
        "settings": settings if settings is not None else sheet_xml(SETTINGS),
    }
    parts = package(sheets, **{part_path(key): body for key, body in extra.items()})
    return pack(parts)


def with_parts(data: bytes, **replaced: bytes) -> bytes:
    """The workbook `data` with parts replaced or added (`xl__styles_xml` -> xl/styles.xml)."""
    parts: dict[str, bytes] = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            parts[name] = archive.read(name)
    for key, body in replaced.items():
        parts[part_path(key)] = body
    return pack(parts)


# -- the hostile forms --------------------------------------------------------------------------


def million_cell_formats() -> bytes:
    """xl/styles.xml with a million <xf/> (the finding: 42 KB, 157 s and 3.1 GB before)."""
    styles = (
        DECLARATION
        + f'<styleSheet xmlns="{MAIN}"><cellXfs count="1000000">'.encode()
        + b"<xf/>" * 1_000_000
        + b"</cellXfs></styleSheet>"
    )
    return form(xl__styles_xml=styles)


def million_style_elements() -> bytes:
    """xl/styles.xml with a million <xf/> where no count of cell formats sees them."""
    styles = (
        DECLARATION
        + f'<styleSheet xmlns="{MAIN}"><cellStyleXfs>'.encode()
        + b"<xf/>" * 1_000_000
        + b"</cellStyleXfs></styleSheet>"
    )
    return form(xl__styles_xml=styles)


def million_cells_in_a_row() -> bytes:
    """A survey row of a million empty <c/>."""
    return form(sheet_xml(SURVEY, data_tail='<row r="3">' + "<c/>" * 1_000_000 + "</row>"))


def huge_shared_string() -> bytes:
    """A shared string of five million characters, the label of the survey's question."""
    strings = (
        DECLARATION
        + f'<sst xmlns="{MAIN}" count="1" uniqueCount="1"><si><t>'.encode()
        + b"a" * 5_000_000
        + b"</t></si></sst>"
    )
    row = '<row r="3"><c r="A3" t="inlineStr"><is><t>note</t></is></c>'
    row += '<c r="B3" t="inlineStr"><is><t>n</t></is></c><c r="C3" t="s"><v>0</v></c></row>'
    return form(sheet_xml(SURVEY, data_tail=row), xl__sharedStrings_xml=strings)


def million_shared_strings() -> bytes:
    """Two million shared strings, 31 MiB: nearly all the bytes a workbook may unpack to."""
    strings = (
        DECLARATION
        + f'<sst xmlns="{MAIN}">'.encode()
        + b"<si><t>x</t></si>" * 1_950_000
        + b"</sst>"
    )
    return form(xl__sharedStrings_xml=strings)


def utf16_entity_bomb() -> bytes:
    """The workbook part as UTF-16 (with its byte order mark), holding a billion laughs."""
    bomb = BOMB.format(MAIN).replace(
        '<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>'
    )
    return with_parts(form(), xl__workbook_xml=bomb.encode("utf-16"))


def utf8_entity_bomb() -> bytes:
    """The survey sheet as a billion laughs in UTF-8."""
    return form(BOMB.format(MAIN).encode())


def deep_nesting() -> bytes:
    """Elements nested a million deep after the survey's cells."""
    return form(
        sheet_xml(SURVEY, tail="<extLst>" + "<x>" * 1_000_000 + "</x>" * 1_000_000 + "</extLst>")
    )


def million_attributes() -> bytes:
    """One element of a million attributes in the survey sheet."""
    attributes = " ".join(f'a{i}=""' for i in range(1_000_000))
    return form(sheet_xml(SURVEY, tail=f"<sheetPr {attributes}/>"))


def million_unknown_elements() -> bytes:
    """A million elements openpyxl does not know, after the survey's cells."""
    return form(sheet_xml(SURVEY, tail="<extLst>" + "<x/>" * 1_000_000 + "</extLst>"))


def too_many_rows() -> bytes:
    """25,601 rows of choices, one over the limit."""
    rows = [["list_name", "name", "label"], *[["yes_no", f"o{i}", f"O {i}"] for i in range(25_601)]]
    return form(choices=sheet_xml(rows))


def full_budget_then_a_long_cell() -> bytes:
    """The choices sheet filled with cells up to the element budget, then a cell of 2,001
    characters: the most streaming before a refusal."""
    rows = "".join(
        f'<row r="{r}">'
        + "".join(f'<c r="{c}{r}" t="inlineStr"><is><t>x</t></is></c>' for c in "ABCDEFGHIJ")
        + "</row>"
        for r in range(4, 4 + 16_000)
    )
    last = 4 + 16_000
    rows += f'<row r="{last}"><c r="C{last}" t="inlineStr"><is><t>{"x" * 2001}</t></is></c></row>'
    return form(choices=sheet_xml(CHOICES, data_tail=rows))


def over_the_questions_after_a_full_budget() -> bytes:
    """101 questions, one over a survey's limit, checked on the values (after openpyxl has
    read the workbook), here after 240,000 shared strings no cell uses."""
    survey: list[list[Cell]] = [SURVEY[0]]
    survey += [["select_one yes_no", f"q{i}", f"Q{i}?", "none", None] for i in range(101)]
    return form(sheet_xml(survey), xl__sharedStrings_xml=shared_strings(240_000))


# -- forms within the limits ---------------------------------------------------------------------


def largest_form(languages: int = 4) -> bytes:
    """100 questions of 256 options, every label in `languages` languages: a valid form."""
    names = LANGUAGES[:languages]
    labels = [f"label::{name}" for name in names]
    survey: list[list[Cell]] = [
        ["type", "name", *labels, "deniable::mechanism", "deniable::epsilon"]
    ]
    for q in range(100):
        text = [f"Question {q} ({name}): " + "x" * 100 for name in names]
        survey.append([f"select_one l{q}", f"q{q}", *text, "grr", 1])
    choices: list[list[Cell]] = [["list_name", "name", *labels]]
    for q in range(100):
        for o in range(256):
            choices.append([f"l{q}", f"o{o}", *[f"Option {o} of {q} ({name})" for name in names]])
    settings = [["form_id", "form_title"], ["largest", "The largest form"]]
    return form(sheet_xml(survey), choices=sheet_xml(choices), settings=sheet_xml(settings))


def budget_of_empty_cells() -> bytes:
    """A valid form whose choices sheet fills the element budget with 495 rows of 1,000 empty
    cells, 50 rows apart (openpyxl reads every cell, the reader every row between)."""
    wide = "".join(f'<row r="{4 + i * 50}">' + "<c/>" * 1000 + "</row>" for i in range(495))
    return form(choices=sheet_xml(CHOICES, data_tail=wide))


def shared_strings(count: int) -> bytes:
    """A shared strings part of `count` short strings."""
    items = b"".join(b"<si><t>s%d</t></si>" % i for i in range(count))
    return DECLARATION + f'<sst xmlns="{MAIN}">'.encode() + items + b"</sst>"


def budget_of_shared_strings() -> bytes:
    """A valid form with 245,000 shared strings no cell uses (openpyxl reads every one)."""
    return form(xl__sharedStrings_xml=shared_strings(245_000))


#: name -> (builder, kind): "hostile" forms are refused by the streaming checks (the target:
#: under 2 s and 200 MB), "late" ones by a limit checked on the values, after openpyxl has read
#: the workbook; "within" ones are within every limit.
FORMS: dict[str, tuple[Callable[[], bytes], str]] = {
    "styles.xml: a million <xf/> cell formats": (million_cell_formats, "hostile"),
    "styles.xml: a million <xf/> elsewhere": (million_style_elements, "hostile"),
    "survey: a row of a million empty <c/>": (million_cells_in_a_row, "hostile"),
    "sharedStrings: a string of 5,000,000 chars": (huge_shared_string, "hostile"),
    "sharedStrings: 2 million strings, 31 MiB": (million_shared_strings, "hostile"),
    "workbook.xml: UTF-16 entity bomb": (utf16_entity_bomb, "hostile"),
    "survey: UTF-8 entity bomb": (utf8_entity_bomb, "hostile"),
    "survey: nested a million deep": (deep_nesting, "hostile"),
    "survey: an element of a million attributes": (million_attributes, "hostile"),
    "survey: a million unknown elements": (million_unknown_elements, "hostile"),
    "choices: 25,601 rows": (too_many_rows, "hostile"),
    "choices: full budget, then a long cell": (full_budget_then_a_long_cell, "hostile"),
    "late: 101 questions after 240,000 strings": (over_the_questions_after_a_full_budget, "late"),
    "within: 100 q x 256 options x 4 languages": (largest_form, "within"),
    "within: budget of empty cells": (budget_of_empty_cells, "within"),
    "within: budget of unused shared strings": (budget_of_shared_strings, "within"),
}


# -- measuring -----------------------------------------------------------------------------------


def peak_mib() -> float:
    """This process's peak resident memory (VmHWM), in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(path: str) -> None:
    """Import the workbook at `path` and print one JSON line: seconds, peaks, outcome."""
    from deniable.aggregator.forms import XLSFormError, import_xlsform

    data = Path(path).read_bytes()
    start_peak = peak_mib()
    start = time.perf_counter()
    try:
        doc = import_xlsform(data)
        outcome, refused = f"imported: {len(doc['questions'])} questions", False
    except XLSFormError as exc:
        outcome, refused = str(exc), True
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_mib": peak_mib(),
                "start_mib": start_peak,
                "refused": refused,
                "outcome": outcome,
            }
        )
    )


def measure(data: bytes) -> dict[str, Any]:
    """Import `data` in a child process of its own: its seconds, peak MiB and outcome."""
    with tempfile.NamedTemporaryFile(suffix=".xlsx") as file:
        file.write(data)
        file.flush()
        done = subprocess.run(
            [sys.executable, __file__, "--child", file.name],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    if done.returncode != 0:
        return {
            "seconds": float("nan"),
            "peak_mib": float("nan"),
            "start_mib": float("nan"),
            "refused": False,
            "outcome": f"crashed: {done.stderr.strip()[-300:]}",
        }
    return json.loads(done.stdout.strip().splitlines()[-1])


def unpacked_size(data: bytes) -> int:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return sum(info.file_size for info in archive.infolist())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--only", nargs="*", help="names (or parts of names) to run")
    parser.add_argument("--list", action="store_true", help="list the forms and exit")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    if args.list:
        print("\n".join(FORMS))
        return
    chosen = [n for n in FORMS if not args.only or any(o in n for o in args.only)]
    print(
        f"{'form':46} {'zip KiB':>8} {'XML MiB':>8} {'time s':>7} {'peak MiB':>9} "
        f"{'at start':>9}  outcome"
    )
    worst = (0.0, 0.0)
    for name in chosen:
        build, kind = FORMS[name]
        data = build()
        got = measure(data)
        flag = ""
        if kind == "hostile":
            met = got["refused"] and got["seconds"] < TIME_TARGET
            met = met and got["peak_mib"] < MEMORY_TARGET
            flag = "ok  " if met else "OVER"
            worst = (max(worst[0], got["seconds"]), max(worst[1], got["peak_mib"]))
        print(
            f"{name:46} {len(data) / 1024:8.0f} {unpacked_size(data) / 2**20:8.1f} "
            f"{got['seconds']:7.2f} {got['peak_mib']:9.0f} {got['start_mib']:9.0f}  "
            f"{flag}{got['outcome'][:150]}",
            flush=True,
        )
    if any(FORMS[n][1] == "hostile" for n in chosen):
        print(
            f"\nworst hostile form: {worst[0]:.2f} s, {worst[1]:.0f} MiB peak "
            f"(targets: refused in under {TIME_TARGET:.0f} s and {MEMORY_TARGET} MB)"
        )


if __name__ == "__main__":
    main()
