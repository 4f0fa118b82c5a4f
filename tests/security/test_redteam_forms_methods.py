"""Red-team regressions for the forms (#27) and survey-methods (#28) features: a hostile
workbook, a hostile researcher's weights table and survey title, each refused in one line or
handled, never a crash and never NaN in the results' JSON."""

from __future__ import annotations

import io
import json
import math
import zipfile
from collections.abc import Callable
from typing import Any

import pyreadstat
import pytest
from openpyxl import Workbook

from deniable.aggregator.exports import write_stat_file
from deniable.aggregator.forms import XLSFormError, import_xlsform
from deniable.aggregator.stats import analyze
from deniable.aggregator.stats.weights_table import MAX_WEIGHT, MIN_WEIGHT, WeightsError
from deniable.shared import Survey, make_report
from deniable.shared.canonical import canonical_json
from deniable.shared.signing import generate_key

# -- a hostile workbook -------------------------------------------------------------------------


def _form() -> bytes:
    """A valid XLSForm of one randomized yes/no question."""
    book = Workbook()
    survey = book.active
    survey.title = "survey"
    survey.append(["type", "name", "label", "deniable::mechanism", "deniable::epsilon"])
    survey.append(["select_one yes_no", "q", "A question?", "rr", 1])
    choices = book.create_sheet("choices")
    for row in (["list_name", "name", "label"], ["yes_no", "yes", "Yes"], ["yes_no", "no", "No"]):
        choices.append(row)
    settings = book.create_sheet("settings")
    settings.append(["form_id", "form_title"])
    settings.append(["redteam", "Red team"])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _with_sheet(change: Callable[[bytes], bytes]) -> bytes:
    """The form with its survey sheet's XML changed (the zip itself stays valid)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(_form())) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            body = source.read(info)
            if info.filename == "xl/worksheets/sheet1.xml":
                body = change(body)
            target.writestr(info.filename, body)
    return out.getvalue()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda xml: xml[:-40], id="sheet XML cut short"),
        pytest.param(lambda xml: xml.replace(b'r="A1"', b'r="ZZZZZZ1"', 1), id="bad cell ref"),
        pytest.param(
            lambda xml: xml.replace(b"<row ", b'<row><c r="A9"><v>x</v></c></row><row ', 1),
            id="row without number",
        ),
        pytest.param(
            lambda xml: xml.replace(
                b"</sheetData>", b'<row r="9"><c r="A9"><v>abc</v></c></row></sheetData>'
            ),
            id="number cell holding text",
        ),
    ],
)
def test_a_damaged_sheet_inside_a_valid_zip_is_refused_in_one_line(change: Any) -> None:
    # The sheets of a read-only workbook are parsed as they are read, after load_workbook:
    # their XML errors escaped as ParseError/ValueError tracebacks (a 500 on the dashboard).
    with pytest.raises(XLSFormError) as caught:
        import_xlsform(_with_sheet(change))
    message = str(caught.value)
    assert "\n" not in message and "sheet" in message


# -- a hostile weights table --------------------------------------------------------------------


def _weights_survey() -> tuple[Survey, list[dict[str, Any]]]:
    survey = Survey.from_dict(
        {
            "id": "redteam-weights",
            "title": "Weights",
            "questions": [
                {
                    "id": "smokes",
                    "text": "Smoke?",
                    "type": "binary",
                    "mechanism": "rr",
                    "rr": {"keep": "3/4"},
                },
                {
                    "id": "region",
                    "text": "Region?",
                    "type": "categorical",
                    "options": ["north", "south"],
                    "mechanism": "none",
                },
            ],
        }
    )
    reports = [
        make_report(
            survey, {"smokes": i % 3 == 0, "region": ["north", "south"][i % 2]}, generate_key()
        )
        for i in range(20)
    ]
    return survey, reports


def _finite(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


@pytest.mark.parametrize("weight", ["1e308", "1e300", "5e-324", "1e-320", "1e10", "1e-10"])
def test_a_weight_too_large_or_small_to_sum_is_refused_naming_the_line(weight: str) -> None:
    # 1e308 passed as "a positive number": the weighted sums overflowed to inf, every estimate
    # became NaN and the results' JSON held NaN (invalid JSON for every client).
    survey, reports = _weights_survey()
    table = f"region,weight\nnorth,1\nsouth,{weight}\n"
    with pytest.raises(WeightsError, match=r"weights, line 3: weight .* is outside"):
        analyze(survey, reports, weights=table)


def test_weights_at_the_limits_give_finite_json() -> None:
    survey, reports = _weights_survey()
    for low, high in ((MAX_WEIGHT, MAX_WEIGHT), (MIN_WEIGHT, MAX_WEIGHT), (MIN_WEIGHT, 1)):
        table = f"region,weight\nnorth,{low!r}\nsouth,{high!r}\n"
        doc = analyze(survey, reports, weights=table).to_dict()
        assert _finite(doc), table
        json.loads(canonical_json(doc))  # strict JSON: no NaN or Infinity
        smokes = doc["questions"][0]["options"][1]
        assert smokes["estimate"] is not None and smokes["count"] is not None


# -- a hostile survey title in a Stata export ---------------------------------------------------


@pytest.mark.parametrize("title", ["<map>", "</header><map>", "<map><map> and <map>"])
def test_a_title_that_spells_the_dta_map_tag_still_exports(tmp_path, title: str) -> None:
    # The notes were written at the first b"<map>" of the file, and the file label (the
    # survey's title) comes before the real map: the export failed with a ValueError.
    survey, reports = _weights_survey()
    survey = Survey.from_dict({**survey.to_dict(), "title": title})
    bodies = iter(json.dumps({"answers": r["answers"]}) for r in reports)
    path = tmp_path / "out.dta"
    write_stat_file(survey, bodies, "dta", str(path))
    frame, meta = pyreadstat.read_dta(str(path))
    assert meta.file_label == title
    assert len(frame) == len(reports)
    assert meta.notes[0].startswith(f"deniable survey {survey.id}, survey hash {survey.hash}")
