"""Real public XLSForms, as researchers have them (tests/forms/SOURCES.md): pyxform's test forms
(ODK's tutorial and widgets, the XLSForm specification's, forms reported to pyxform), HOT's
OpenStreetMap field-mapping forms and wq.io's, fetched from pinned packages by
scripts/test-forms.py. None imports as it is (deniable needs a privacy choice, and says so in one
message); with only the privacy choice added (docs/xlsform.md, "Bring your ODK/Kobo form") some
import, with --drop-unsupported more; nothing a form asks is lost without a notice; each survey
comes back with the same hash from its exported form; damaged .xls files are refused in one
line."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from realforms import ROOT, SCRIPT, outcome, real_forms, with_privacy

from deniable.aggregator.forms import XLSFormError, export_xlsform, import_xlsform, read_xlsform
from deniable.aggregator.forms.columns import read_columns
from deniable.aggregator.forms.rows import Asks, kind_of
from deniable.aggregator.forms.workbook import read_book
from deniable.shared.survey import Survey

#: The forms that import with only the privacy choice added, then those that need
#: --drop-unsupported too (every other real form is refused, naming its problems).
WITH_PRIVACY = {
    "pyxform-ict_survey_fails.xls",
    "pyxform-excel_with_macros.xlsm",
    "pyxform-badly_named_choices_sheet.xls",
    "pyxform-allow_comment_rows_test.xls",
    "pyxform-instance_xmlns_test.xls",
    "pyxform-settings.xls",
    "pyxform-specify_other.xls",
    "pyxform-style_settings.xls",
    "pyxform-survey_no_name.xlsx",
    "pyxform-text_and_integer.xls",
    "pyxform-yes_or_no_question.xls",
}
WITH_DROP = {
    "pyxform-widgets.xls",
    "pyxform-ODKValidateWarnings.xlsx",
    "pyxform-spaces_in_choices_header.xls",
    "pyxform-xl_date_ambiguous_v1.xlsx",
    "pyxform-choice_filter_test.xlsx",
    "pyxform-group.xls",
    "pyxform-include.xls",
    "pyxform-loop.xls",
    "pyxform-new_cascading_select.xls",
    "pyxform-or_other.xlsx",
    "pyxform-sms_info.xls",
    "pyxform-table-list.xls",
    "pyxform-warnings.xls",
    "hot-cemeteries.xls",
    "hot-education.xls",
    "hot-health.xls",
    "hot-historical.xls",
    "hot-landusage.xls",
    "hot-nature.xls",
    "hot-places.xls",
    "hot-religious.xls",
    "hot-solidwaste.xlsx",
    "hot-test.xls",
    "hot-toilets.xls",
    "hot-wastedisposal.xls",
    "hot-waterpoints.xls",
    "hot-waterways.xls",
    "wq-input_types.xls",
}
FORMS = real_forms()  # an AssertionError saying to run scripts/test-forms.py when missing
IMPORTED = sorted(WITH_PRIVACY | WITH_DROP)
_ROWS = re.compile(r"\brows? (\d+)(?:-(\d+))?|\(row (\d+)\)")


def test_the_sources_list_is_what_the_script_extracts() -> None:
    assert (ROOT / "tests" / "forms" / "SOURCES.md").read_text("utf-8") == SCRIPT.sources()
    assert len(FORMS) == len(SCRIPT.FORMS) >= 10
    assert {p.name for p in FORMS} >= WITH_PRIVACY | WITH_DROP


def test_forms_of_every_origin_import_with_the_privacy_choice_added() -> None:
    assert len(WITH_PRIVACY) + len(WITH_DROP) >= 10
    origins = {name.split("-", 1)[0] for name in IMPORTED}
    assert origins == {"pyxform", "hot", "wq"}


@pytest.mark.parametrize("path", FORMS, ids=lambda p: p.name)
def test_each_real_form_imports_as_expected(path: Path) -> None:
    """As-is every real form is refused (the privacy choice, at least, is missing); with the
    privacy choice added it imports exactly when listed above."""
    got = outcome(path)
    assert got == {
        "as-is": False,
        "privacy": path.name in WITH_PRIVACY,
        "drop": path.name in WITH_PRIVACY | WITH_DROP,
    }
    with pytest.raises(XLSFormError) as caught:
        read_xlsform(path.read_bytes(), filename=path.name)
    said = caught.value.problems
    assert said and all("\n" not in line and "Traceback" not in line for line in said)
    if path.name in WITH_PRIVACY | WITH_DROP:
        assert any(line.startswith("the form makes no privacy choice") for line in said)


def _mentioned(notices: list[str]) -> set[int]:
    """Every survey row a notice names (`row 7`, `rows 3-12`, `(row 7)`)."""
    rows: set[int] = set()
    for notice in notices:
        for first, last, lone in _ROWS.findall(notice):
            if lone:
                rows.add(int(lone))
            else:
                rows.update(range(int(first), int(last or first) + 1))
    return rows


@pytest.mark.parametrize("name", IMPORTED)
def test_nothing_a_real_form_asks_is_lost_without_a_notice(name: str) -> None:
    data = with_privacy((SCRIPT.REAL / name).read_bytes())
    result = read_xlsform(data, filename=name, drop_unsupported=name in WITH_DROP)
    doc = result.document
    kept = {q["id"]: q for q in doc["questions"]}
    notes = " ".join(q.get("note", "") for q in doc["questions"])
    named = _mentioned(result.notices)
    sheet = read_book(data).sheet("survey")
    columns = {c.header: c for c in read_columns("survey", sheet.headers)}
    label = next(h for h, c in columns.items() if c.key == "label")
    for number, row in sheet.numbered():
        kind = kind_of(row.get("type", "")) if row.get("type") else None
        if kind is None or kind.what in ("end-group", "end-repeat"):
            continue
        asked = kind.what == "question" and (row.get("name") or "").lower() in kept
        shown = kind.what in ("note", "group") and row.get(label, "\0") in notes
        shown |= kind.what == "group" and not any(columns[h].key == "label" for h in row)
        assert asked or shown or number in named, f"{name}: row {number} lost: {row}"
        if not asked:
            continue
        for header, value in row.items():  # each cell honoured, or its column named
            key = columns[header].key
            honoured = key in ("type", "name", "label", "hint", "relevant") or key.startswith(
                "deniable::"
            )
            honoured |= key == "constraint" and kind.asks is Asks.WHOLE_NUMBER
            honoured |= key == "required" and value.strip().lower() in ("yes", "true", "true()")
            honoured |= columns[header].language is not None and key == "label"
            if not honoured:
                assert any(repr(header) in n for n in result.notices), f"{name}: {header} lost"


@pytest.mark.parametrize("name", IMPORTED)
def test_every_imported_real_form_keeps_its_hash_through_export(name: str) -> None:
    data = with_privacy((SCRIPT.REAL / name).read_bytes())
    survey = Survey.from_dict(
        import_xlsform(data, filename=name, drop_unsupported=name in WITH_DROP)
    )
    again = Survey.from_dict(import_xlsform(export_xlsform(survey)))
    assert again.hash == survey.hash


def test_a_real_xls_damaged_anywhere_is_refused_in_lines_never_a_crash() -> None:
    """Bytes changed at random in a real .xls (ODK's tutorial): each import succeeds or is
    refused with one-line problems; the reading stays within the file's bounds."""
    original = (SCRIPT.REAL / "pyxform-tutorial.xls").read_bytes()
    rng = random.Random(35)
    for _ in range(150):
        raw = bytearray(original)
        for _ in range(rng.randint(1, 12)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        cut = rng.choice([len(raw), rng.randrange(512, len(raw))])
        try:
            import_xlsform(bytes(raw[:cut]), filename="tutorial.xls")
        except XLSFormError as exc:
            assert exc.problems and all("\n" not in p for p in exc.problems)


def test_the_demo_creates_a_survey_from_a_real_public_form(tmp_path: Path) -> None:
    """`make demo`: scripts/test-forms.py --demo-form writes HOT's waterpoints form with the
    privacy choice added; `deniable-aggregator demo --xlsform ... --drop-unsupported` creates
    its survey beside the examples and answers it with simulated respondents."""
    demo_form = tmp_path / "demo-form.xlsx"
    script = [
        sys.executable,
        str(ROOT / "scripts" / "test-forms.py"),
        "--demo-form",
        str(demo_form),
    ]
    subprocess.run(script, check=True, capture_output=True, timeout=120)
    command = [
        str(Path(sys.executable).parent / "deniable-aggregator"),
        "demo",
        "--no-serve",
        "--port",
        "0",
        "--respondents",
        "40",
        "--xlsform",
        str(demo_form),
        "--drop-unsupported",
    ]
    env = {**os.environ, "DENIABLE_DATA_DIR": str(tmp_path / "data")}
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "survey:  waterpoints (40 reports" in result.stdout
    assert "note: demo-form.xlsx: survey sheet: left out the metadata rows start" in result.stderr
