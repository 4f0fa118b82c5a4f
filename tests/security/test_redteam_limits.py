"""Red-team regressions for the limits of #34: an XLSForm that names one sheet several times, puts
a sheet where openpyxl reads something else, lists a hundred thousand files or holds megabytes of
pending XML; planners given a degenerate sketch, a decoder past the limit or a tiny alpha; limits
that are not numbers. Each is refused in one line before the work, or answered."""

from __future__ import annotations

import importlib.util
import io
import math
import struct
import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from deniable.aggregator.forms import XLSFormError, import_xlsform, workbook, xmlguard
from deniable.aggregator.stats import planning, power, sketch_estimate
from deniable.aggregator.stats.limits import Limits

ROOT = Path(__file__).resolve().parents[2]


def _benchmark() -> ModuleType:
    """benchmarks/xlsform_limits.py (its workbook writer) as a module."""
    spec = importlib.util.spec_from_file_location(
        "xlsform_limits_redteam", ROOT / "benchmarks" / "xlsform_limits.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _benchmark()


def _parts() -> dict[str, bytes]:
    """The parts of the benchmark's valid form (survey, choices, settings: sheet1..3)."""
    sheets = {
        "survey": bench.sheet_xml(bench.SURVEY),
        "choices": bench.sheet_xml(bench.CHOICES),
        "settings": bench.sheet_xml(bench.SETTINGS),
    }
    return bench.package(sheets)


def _with_sheets(parts: dict[str, bytes], *entries: tuple[str, str]) -> dict[str, bytes]:
    """`parts` whose workbook also lists the sheets (name, relationship id) `entries`."""
    listed = "".join(
        f'<sheet name="{name}" sheetId="{10 + i}" r:id="{rid}"/>'
        for i, (name, rid) in enumerate(entries)
    )
    parts["xl/workbook.xml"] = parts["xl/workbook.xml"].replace(
        b"</sheets>", listed.encode() + b"</sheets>"
    )
    return parts


def _moved(parts: dict[str, bytes], sheet: int, path: str) -> dict[str, bytes]:
    """`parts` with worksheet `sheet` moved to `path` (its relationship follows it)."""
    parts[path] = parts.pop(f"xl/worksheets/sheet{sheet}.xml")
    parts["xl/_rels/workbook.xml.rels"] = parts["xl/_rels/workbook.xml.rels"].replace(
        f'Target="worksheets/sheet{sheet}.xml"'.encode(), f'Target="/{path}"'.encode()
    )
    return parts


def _one_line(data: bytes) -> str:
    """The refusal of `data`, the same from unpack (before openpyxl) and the whole import."""
    with pytest.raises(XLSFormError) as early:
        workbook.unpack(data)
    with pytest.raises(XLSFormError) as caught:
        import_xlsform(data)
    assert str(caught.value) == str(early.value) and "\n" not in str(early.value)
    return str(early.value)


# -- XLSForm ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "names",
    [("Survey",), ("survey ",), ("survey",), ("CHOICES", "choices")],
    ids=["case", "space", "same name", "choices"],
)
def test_a_second_sheet_of_a_role_is_refused_not_read_again(names: tuple[str, ...]) -> None:
    """Finding: every sheet named survey (any case or spacing, or the very same name) was read
    in full, a sheet of 500,000 elements listed 10,000 times took hours; the second one of a
    role is refused while the workbook's list streams."""
    entries = [(name, "rId1" if name.strip().lower() == "survey" else "rId2") for name in names]
    message = _one_line(bench.pack(_with_sheets(_parts(), *entries)))
    role = names[0].strip().lower()
    assert message.startswith(f"the workbook has two {role} sheets, ")
    assert "keep one" in message


def test_sheets_the_reader_skips_may_share_a_part() -> None:
    """Sheets deniable does not read may be listed many times: they cost an empty sheet."""
    data = bench.pack(_with_sheets(_parts(), *[(f"notes {i}", "rId1") for i in range(50)]))
    assert import_xlsform(data)["id"] == "limits"


@pytest.mark.parametrize(
    "path",
    [
        "xl/styles.xml",  # openpyxl parses the stylesheet whole
        "docProps/core.xml",  # and the document properties
        "docProps/custom.xml",
        "xl/worksheets/_rels/sheet1.xml.rels",  # and each sheet's relationships, per listing
    ],
)
def test_no_sheet_reaches_openpyxl_at_a_path_it_reads_as_something_else(path: str) -> None:
    """Finding: a sheet (streamed within the limits as a sheet) at xl/styles.xml or
    docProps/core.xml was parsed whole by openpyxl as well (+200 MB for 1.6 MB of XML), and at
    another sheet's relationships path once per listing of that sheet (0.75 s each, up to
    10,000 listings). openpyxl now reads a package written for it, each part at its role's
    path alone; the form reads as before."""
    wide = "".join(f'<row r="{10 + i}">' + "<c/>" * 50 + "</row>" for i in range(20))
    parts = _parts()
    parts["xl/worksheets/sheet2.xml"] = bench.sheet_xml(bench.CHOICES, data_tail=wide)
    parts = _with_sheets(_moved(parts, 2, path), *[(f"x{i}", "rId1") for i in range(5)])
    data = bench.pack(parts)
    with zipfile.ZipFile(io.BytesIO(workbook.unpack(data))) as clean:
        names = clean.namelist()
        assert path not in names or path == "xl/styles.xml"
        assert not any(name.startswith("docProps/") or "/_rels/sheet" in name for name in names)
        assert sorted(names) == sorted(
            ["[Content_Types].xml", "xl/_rels/workbook.xml.rels", "xl/workbook.xml"]
            + [f"xl/worksheets/sheet{i}.xml" for i in range(1, 9)]  # x0 ... x4 empty
        )
    assert import_xlsform(data)["questions"][0]["id"] == "smokes"


def test_a_zip_listing_more_files_than_allowed_is_refused_before_zipfile_lists_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding: zipfile builds an object for every entry of the central directory before the
    count is checked (110,000 entries in 5 MB: 1.4 s and 60 MiB); the entries are counted in
    the bytes first."""
    data = bench.form()
    end = data.rfind(b"PK\x05\x06")
    size, offset = struct.unpack_from("<II", data, end + 12)
    entry = data[offset : offset + 46]  # the first file's entry, its name cut off
    entry = entry[:28] + b"\0\0\0\0\0\0" + entry[34:]
    directory = data[offset : offset + size] + entry * 300
    total = min(0xFFFF, 306)
    tail = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, total, total, len(directory), offset, 0)

    def listed(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("zipfile read the central directory")

    monkeypatch.setattr(workbook.zipfile, "ZipFile", listed)
    with pytest.raises(XLSFormError) as refused:
        workbook.unpack(data[:offset] + directory + tail)
    assert str(refused.value).startswith(
        f"the workbook holds more than {workbook.MAX_MEMBERS} files"
    )


def test_the_attribute_count_reads_each_byte_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding: the check for crowded tags searched again, at every 64 KiB chunk, all the XML
    expat held unparsed (up to 1 MiB): 30 such comments full of '<a b=""...' in 100 KB of zip
    took 7 s to import. A chunk is now searched from the last '<' before it."""
    searched = []

    class Counting:
        def search(self, body: bytes, start: int, end: int) -> Any:
            searched.append(end - start)
            return crowded.search(body, start, end)

    crowded = xmlguard._CROWDED_TAG
    monkeypatch.setattr(xmlguard, "_CROWDED_TAG", Counting())
    comment = "<!--" + ("<a" + ' b=""' * 100) * 1500 + "--><x/>"  # 760 KB held unparsed
    sheet = bench.sheet_xml(bench.SURVEY, tail="<extLst>" + comment * 4 + "</extLst>")
    assert import_xlsform(bench.form(sheet))["id"] == "limits"
    assert sum(searched) < 3 * len(sheet) + 2 * xmlguard._CHUNK * len(searched)


# -- planners and limits -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0, 0, 0), (32, 0, 16), (32, 2, 0), (0, 2, 16)])
def test_a_rappor_plan_of_a_degenerate_sketch_says_what_to_give(shape: tuple[int, ...]) -> None:
    """Finding: `plan --mechanism rappor --sketch 0x0x0` said "unexpected ZeroDivisionError"."""
    with pytest.raises(planning.PlanError, match="^sketch: "):
        planning.plan(1.0, margin=0.1, options=2, mechanism="rappor", sketch=shape)


def test_a_rappor_plan_past_the_decoder_limit_is_refused_before_it_decodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding: the RAPPOR planner built its decoder with no limit: 256 candidates of a
    4096x4096x16 sketch took 58 s and 462 MB on the dashboard's planner or `plan`."""

    def built(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the planner built a decoder past the limit")

    monkeypatch.setattr(sketch_estimate, "decoder", built)
    with pytest.raises(planning.PlanError) as refused:
        planning.plan(1.0, margin=0.1, options=256, mechanism="rappor", sketch=(4096, 4096, 16))
    message = str(refused.value)
    assert "16,842,752 cells" in message and "DENIABLE_MAX_DECODER_CELLS" in message


@pytest.mark.parametrize("margin", ["0.1", math.nan, 1.0, True])
def test_a_rappor_margin_that_is_not_a_share_is_refused(margin: Any) -> None:
    with pytest.raises(planning.PlanError, match="^margin: "):
        planning.plan(1.0, margin=margin, options=2, mechanism="rappor")


@pytest.mark.parametrize("one_sided", [False, True])
def test_a_power_at_an_alpha_below_float_resolution_is_computed(one_sided: bool) -> None:
    """Finding: alpha 1e-17 (accepted: `--alpha 0.00000000000000001`) made 1 - alpha round to
    1 and the normal quantile raise StatisticsError ("unexpected" in the CLI)."""
    design = power.design_of("rr", 1.0)
    result = power.power(
        "one-sample", 0.3, n=100, p_star=design[0], q_star=design[1], alpha=1e-17,
        one_sided=one_sided,
    )  # fmt: skip
    assert 0.0 <= result.power < 1e-6  # 100 answers cannot reject at such an alpha
    needed = power.sample_size(
        "one-sample", 0.3, target=0.8, p_star=design[0], q_star=design[1], alpha=1e-17,
        one_sided=one_sided,
    )  # fmt: skip
    usual = power.sample_size(
        "one-sample", 0.3, target=0.8, p_star=design[0], q_star=design[1], alpha=1e-6
    )
    assert needed.n > usual.n and needed.power >= 0.8


@pytest.mark.parametrize("value", [math.nan, "8000000", None, 1.5, True, 0, -1])
def test_limits_that_are_not_whole_numbers_are_refused_naming_the_field(value: Any) -> None:
    """Finding: Limits(max_decoder_cells=nan) let every request through (no comparison with
    NaN is true) and a string failed deep inside an analysis."""
    with pytest.raises(ValueError, match=r"^limits\.max_decoder_cells: expected a whole number"):
        Limits(max_decoder_cells=value)
    assert Limits(decoder_cache_bytes=0).decoder_cache_bytes == 0  # no cache is a choice


def test_rappor_candidates_beyond_its_bits_are_sent_to_selection_before_any_hash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding: a results request of a rappor question with more candidates than its cohorts
    x bits hashed every candidate's Bloom bits for a decoder that had to fail, then again for
    the selection, on every request (the failure is not cached): 3 such questions of 1,050
    candidates cost 31 s a request. More candidates than m k rows cannot be independent."""
    from deniable.shared.sketches import RAPPOR

    def hashed(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Bloom bits computed for a decoder that cannot exist")

    monkeypatch.setattr(sketch_estimate, "_bloom_incidence", hashed)
    sketch = RAPPOR(k=4, h=1, m=2, f=0.5, p=0.5, q=0.75)
    with pytest.raises(sketch_estimate.SketchDecodeError, match="cannot tell"):
        sketch_estimate.decoder(sketch, [f"word {i}" for i in range(9)])


# -- exports ---------------------------------------------------------------------------------------


def test_names_of_ids_sharing_their_first_32_characters_are_found_in_linear_work() -> None:
    """Finding: every name tried its suffixes from _2 again, so ids that are the same once cut
    to Stata's 32 characters took quadratic work: 99 select-all questions of 256 options with
    64-character ids (25,345 columns) made every .dta/.sav export take 144 s. The names tried
    are counted (each is case-folded once to be looked up)."""
    from deniable.aggregator.exports import tables

    tried = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal tried
        if event == "c_call" and getattr(arg, "__name__", "") == "casefold":
            tried += 1

    ids = [f"{'x' * 32}q{i}_{k}" for i in range(4) for k in range(1, 257)]
    sys.setprofile(count)
    try:
        names = tables.variable_names(ids)
    finally:
        sys.setprofile(None)
    assert len({name.casefold() for name in names.values()}) == len(ids)
    assert names[ids[0]] == "x" * 32 and names[ids[1]] == "x" * 30 + "_2"
    assert tried <= 10 * len(ids)  # a few a name; quadratic was over half a million


def test_a_sheet_listed_again_under_another_name_is_not_parsed_again() -> None:
    """Finding: openpyxl parses a sheet's XML for each time the workbook lists it (looking for
    its dimensions): 10,000 listings of a sheet deniable reads, under names it does not, made
    a 55 KB form take minutes (hours with a full sheet). A sheet not read is an empty part of
    its own, and a workbook lists at most MAX_SHEETS sheets."""
    data = bench.pack(_with_sheets(_parts(), *[(f"n{i}", "rId2") for i in range(20)]))
    with zipfile.ZipFile(io.BytesIO(workbook.unpack(data))) as clean:
        rels = clean.read("xl/_rels/workbook.xml.rels").decode()
        targets = [target for target in rels.split('Target="/')[1:]]
        paths = [target.split('"')[0] for target in targets]
        assert len(paths) == 23 and len(set(paths)) == 23  # every listing its own part
        assert all(b"<row" not in clean.read(path) for path in paths[3:])
    assert import_xlsform(data)["id"] == "limits"
    many = [(f"n{i}", "rId1") for i in range(xmlguard.MAX_SHEETS - 2)]
    message = _one_line(bench.pack(_with_sheets(_parts(), *many)))
    assert message.startswith(f"the workbook lists more than {xmlguard.MAX_SHEETS} sheets")
