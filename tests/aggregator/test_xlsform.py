"""XLSForm in and out (docs/xlsform.md): the mapping of each column, the round trip keeping the
survey's hash, every problem named in one run by its sheet, row and column, and the limits
checked before parsing. Forms as researchers already have them (pyxform's spellings, display
columns, metadata, groups, --drop-unsupported) are in test_xlsform_forms.py."""

from __future__ import annotations

import copy
import importlib.util
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openpyxl import Workbook, load_workbook

from deniable.aggregator import forms
from deniable.aggregator.forms import XLSFormError, export_xlsform, import_xlsform, relevance
from deniable.shared import conditions
from deniable.shared.survey import Survey

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "health-multilingual.xlsx"
HEADERS = ["type", "name", "label", "relevant", "constraint", "deniable::mechanism"]
HEADERS += ["deniable::epsilon"]
YES_NO = [["yes_no", "yes", "Yes"], ["yes_no", "no", "No"]]


def workbook_bytes(
    survey: list[list[Any]],
    choices: list[list[Any]] | None = None,
    settings: list[list[Any]] | None = None,
) -> bytes:
    """An .xlsx of the given sheets, each a header row then its rows."""
    book = Workbook()
    sheet = book.active
    sheet.title = "survey"
    for row in survey:
        sheet.append(row)
    for name, rows in (("choices", choices), ("settings", settings)):
        if rows is not None:
            extra = book.create_sheet(name)
            for row in rows:
                extra.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def simple_form(*rows: list[Any], headers: list[str] | None = None, **sheets: Any) -> bytes:
    """A form with a plain gate `smokes`, then `rows` (headers: HEADERS by default)."""
    head = headers or HEADERS
    gate = {
        "type": "select_one yes_no",
        "name": "smokes",
        "label": "Do you smoke?",
        "deniable::mechanism": "none",
    }
    body = [[gate.get(h) for h in head], *rows]
    choices = sheets.get("choices", [["list_name", "name", "label"], *YES_NO])
    settings = sheets.get("settings", [["form_id", "form_title"], ["test-form", "Test form"]])
    return workbook_bytes([head, *body], choices, settings)


def randomized(name: str = "q", **cells: Any) -> list[Any]:
    """A randomized yes/no row in HEADERS order, with `cells` by column."""
    row = {
        "type": "select_one yes_no",
        "name": name,
        "label": "A question?",
        "deniable::mechanism": "rr",
        "deniable::epsilon": 1,
        **cells,
    }
    return [row.get(h) for h in HEADERS]


def refused(data: bytes, **options: Any) -> list[str]:
    """Every problem of a refused form, each one line."""
    with pytest.raises(XLSFormError) as caught:
        import_xlsform(data, **options)
    problems = caught.value.problems
    assert problems and str(caught.value) == "\n".join(problems)[: len(str(caught.value))]
    for problem in problems:
        assert "\n" not in problem and "Traceback" not in problem
    return problems


def one(data: bytes) -> str:
    """The one problem of a form refused as a whole (not a workbook, over a limit)."""
    problems = refused(data)
    assert len(problems) == 1, problems
    return problems[0]


def refused_with(data: bytes, start: str, said: str = "", **options: Any) -> str:
    """The one problem of a refused form that starts with `start` and says `said`."""
    problems = refused(data, **options)
    found = [p for p in problems if p.startswith(start) and said in p]
    assert found, problems
    return found[0]


# -- the example ---------------------------------------------------------------------------------


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("make_xlsform", ROOT / "examples/make_xlsform.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _values(book: Any) -> dict[str, list[tuple[Any, ...]]]:
    return {name: list(book[name].iter_rows(values_only=True)) for name in book.sheetnames}


@pytest.mark.parametrize("path", ["examples", "aggregator/examples"])
def test_the_committed_example_is_what_the_script_writes(path: str) -> None:
    written = _values(_script().build())
    committed = _values(load_workbook(ROOT / path / "health-multilingual.xlsx"))
    assert committed == written
    assert set(written) == {"survey", "choices", "settings"} and len(written["survey"]) == 10


def test_the_example_imports_to_a_multilingual_survey_with_skip_logic() -> None:
    doc = import_xlsform(EXAMPLE.read_bytes(), filename=EXAMPLE.name)
    survey = Survey.from_dict(doc)
    assert doc["id"] == "health-multilingual" and doc["language"] == "en"
    assert list(doc["translations"]) == ["fr", "ar"]
    types = {q["id"]: q["type"] for q in doc["questions"]}
    assert types == {
        "age": "integer",
        "region": "categorical",
        "smokes": "binary",
        "cigarettes": "integer",
        "quit": "binary",
        "alcohol": "categorical",
        "used": "multi",
        "town": "text",
    }
    by_id = {q["id"]: q for q in doc["questions"]}
    assert (by_id["age"]["min"], by_id["age"]["max"]) == (18, 99)
    assert by_id["age"]["note"].startswith("Your answers to the randomized questions")
    assert by_id["age"]["hint"] == "In whole years."
    assert by_id["region"]["options"] == ["North", "South", "East", "West"]
    assert by_id["cigarettes"]["relevant"] == by_id["quit"]["relevant"] == "smokes == 'yes'"
    assert by_id["town"]["candidates"] == ["casablanca", "rabat", "fes", "marrakesh", "tangier"]
    arabic = doc["translations"]["ar"]
    assert arabic["title"] == "الصحة بثلاث لغات (مثال)"
    assert arabic["questions"]["smokes"]["options"] == ["لا", "نعم"]  # wire order: no, yes
    assert doc["translations"]["fr"]["questions"]["age"]["note"].startswith("Vos réponses")
    # The plain question gates the two randomized ones.
    assert survey.questions["smokes"].plain and not survey.questions["quit"].plain
    assert "cigarettes" not in survey.relevant({"smokes": "no"})
    assert {"cigarettes", "quit"} <= set(survey.relevant({"smokes": "yes"}))
    assert survey.epsilon == pytest.approx(8.0, abs=1e-6)


def test_import_export_import_keeps_the_hash() -> None:
    first = Survey.from_dict(import_xlsform(EXAMPLE.read_bytes()))
    exported = export_xlsform(first)
    second = Survey.from_dict(import_xlsform(exported))
    assert second.hash == first.hash
    assert Survey.from_dict(import_xlsform(export_xlsform(second))).hash == first.hash
    sheets = _values(load_workbook(io.BytesIO(exported)))
    header = sheets["survey"][0]
    assert "label::Arabic (ar)" in header and "deniable::keep" in header
    relevant = [row[header.index("relevant")] for row in sheets["survey"][1:]]
    assert "${smokes} = 'yes'" in relevant


@pytest.mark.parametrize("name", ["demo-survey.json", "demo-numbers.json"])
def test_a_json_survey_exports_to_a_form_with_the_same_hash(name: str) -> None:
    survey = Survey.from_dict(json.loads((ROOT / "aggregator/examples" / name).read_text()))
    again = Survey.from_dict(import_xlsform(export_xlsform(survey)))
    assert again.hash == survey.hash


def test_export_writes_labels_as_text_never_formulas() -> None:
    doc = {
        "id": "formula",
        "title": '=HYPERLINK("http://x")',
        "questions": [
            {
                "id": "q",
                "text": "=1+1",
                "type": "categorical",
                "options": ["=A1", "b c", "b_c"],
                "epsilon": 1.0,
            }
        ],
    }
    survey = Survey.from_dict(doc)
    exported = export_xlsform(survey)
    book = load_workbook(io.BytesIO(exported))
    assert book["survey"]["C2"].value == "=1+1" and book["survey"]["C2"].data_type == "s"
    again = import_xlsform(exported)
    assert again["questions"][0]["options"] == ["=A1", "b c", "b_c"]
    assert Survey.from_dict(again).hash == survey.hash


def test_conditions_on_options_export_by_choice_name_and_come_back() -> None:
    doc = {
        "id": "gates",
        "title": "Gates",
        "questions": [
            {
                "id": "region",
                "text": "Region?",
                "type": "categorical",
                "mechanism": "none",
                "options": ["North side", "South"],
            },
            {
                "id": "used",
                "text": "Used?",
                "type": "multi",
                "mechanism": "none",
                "options": ["A drug", "B"],
            },
            {
                "id": "age",
                "text": "Age?",
                "type": "integer",
                "min": 0,
                "max": 99,
                "mechanism": "none",
            },
            {
                "id": "q",
                "text": "Q?",
                "type": "binary",
                "epsilon": 1.0,
                "relevant": "region == 'North side' and ('A drug' in used or not (age < 18))",
            },
        ],
    }
    survey = Survey.from_dict(doc)
    exported = export_xlsform(survey)
    sheets = _values(load_workbook(io.BytesIO(exported)))
    header = sheets["survey"][0]
    written = sheets["survey"][4][header.index("relevant")]
    assert written == (
        "${region} = 'north_side' and (selected(${used}, 'a_drug') or not(${age} < 18))"
    )
    again = Survey.from_dict(import_xlsform(exported))
    assert (
        again.questions["q"].relevant == "region == 'North side' and ('A drug' in used or "
        "not (age < 18))"
    )
    assert again.hash == survey.hash


# -- columns ---------------------------------------------------------------------------------------


def test_each_type_and_its_privacy_columns() -> None:
    headers = [*HEADERS, "hint", "deniable::keep", "deniable::candidates", "required"]

    def row(**cells: Any) -> list[Any]:
        return [cells.get(h) for h in headers]

    data = simple_form(
        row(
            type="select_one ab",
            name="cat",
            label="Cat?",
            **{"deniable::mechanism": "grr", "deniable::keep": "0.75"},
        ),
        row(
            type="select_multiple ab",
            name="many",
            label="Many?",
            hint="All that apply.",
            **{"deniable::epsilon": 2, "required": "yes"},
        ),
        row(
            type="int",
            name="n",
            label="How many?",
            constraint=". <= 10 and . >= 1",
            **{"deniable::mechanism": "onebit", "deniable::epsilon": 1},
        ),
        row(
            type="string",
            name="town",
            label="Town?",
            **{"deniable::epsilon": 2, "deniable::candidates": "Lagos\n\nKano \n"},
        ),
        headers=headers,
        choices=[["list_name", "name", "label"], *YES_NO, ["ab", "a", "A"], ["ab", "b", "B"]],
    )
    doc = import_xlsform(data)
    questions = {q["id"]: q for q in doc["questions"]}
    assert questions["smokes"] == {
        "id": "smokes",
        "text": "Do you smoke?",
        "type": "binary",
        "mechanism": "none",
    }
    assert questions["cat"]["grr"] == {"keep": "0.75"} and questions["cat"]["options"] == ["A", "B"]
    assert questions["many"]["type"] == "multi" and questions["many"]["hint"] == "All that apply."
    assert questions["n"]["min"] == 1 and questions["n"]["max"] == 10
    assert questions["town"]["type"] == "text" and questions["town"]["candidates"] == [
        "Lagos",
        "Kano",
    ]
    assert "language" not in doc and doc["title"] == "Test form" and doc["id"] == "test-form"
    survey = Survey.from_dict(doc)
    assert survey.questions["cat"].p_star == 0.75


def test_a_list_named_exactly_yes_and_no_is_binary_any_other_categorical() -> None:
    choices = [
        ["list_name", "name", "label"],
        ["yes_no", "no", "Non"],
        ["yes_no", "yes", "Oui"],
        ["ynm", "yes", "Yes"],
        ["ynm", "no", "No"],
        ["ynm", "maybe", "Maybe"],
    ]
    data = simple_form(
        randomized("q1"),
        randomized("q2", type="select_one ynm", **{"deniable::mechanism": "grr"}),
        choices=choices,
    )
    types = [q["type"] for q in import_xlsform(data)["questions"]]
    assert types == ["binary", "binary", "categorical"]


def test_notes_and_groups_become_the_next_questions_note() -> None:
    survey = [
        HEADERS,
        ["note", "hello", "Welcome."],
        ["begin group", "g1", "About smoking"],
        ["select_one yes_no", "smokes", "Do you smoke?", None, None, "none"],
        ["end group", "g1"],
        ["begin_group", "g2"],
        ["note", "n2", "Now the sensitive part."],
        ["note", "n3", "Take your time."],
        randomized("q"),
        ["end_group"],
    ]
    doc = import_xlsform(workbook_bytes(survey, [["list_name", "name", "label"], *YES_NO]))
    notes = [q.get("note") for q in doc["questions"]]
    assert notes == ["Welcome.\n\nAbout smoking", "Now the sensitive part.\n\nTake your time."]


def test_settings_give_id_title_language_and_the_rest() -> None:
    settings = [
        [
            "form_id",
            "form_title",
            "default_language",
            "version",
            "deniable::enrollment",
            "deniable::closes_at",
            "deniable::description",
        ],
        ["Health-Form", "Health", "fr", "2026010101", "invite", "2030-01-01T00:00:00Z", "Desc"],
    ]
    doc = import_xlsform(simple_form(randomized(), settings=settings))
    assert doc["id"] == "health-form" and doc["title"] == "Health" and doc["language"] == "fr"
    assert doc["enrollment"] == "invite" and doc["closes_at"] == "2030-01-01T00:00:00Z"
    assert doc["description"] == "Desc"
    # Without a settings sheet: the file's name is the id and the title.
    survey = [HEADERS, randomized()]
    doc = import_xlsform(
        workbook_bytes(survey, [["list_name", "name", "label"], *YES_NO]), filename="My-Form.xlsx"
    )
    assert doc["id"] == "my-form" and doc["title"] == "my-form"


# -- skip logic ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("xlsform", "deniable"),
    [
        ("${a} = 'x'", "a == 'x'"),
        ("${a}='x' and ${b}>=3", "a == 'x' and b >= 3"),
        (
            "not(${a} != 'x') or (${b} < -2 and ${b} > 1.5)",
            "not (a != 'x') or (b < -2 and b > 1.5)",
        ),
        ("selected(${c}, 'x')", "'x' in c"),
        ('${a} = "it\'s"', 'a == "it\'s"'),
        ("'x' = ${a}", "'x' == a"),
    ],
)
def test_relevant_translates_to_deniables_grammar(xlsform: str, deniable: str) -> None:
    tree = relevance.parse_xlsform(xlsform)
    assert relevance.to_deniable(tree, lambda q, v: v) == deniable
    back = conditions.parse(deniable).tree
    assert relevance.to_deniable(back, lambda q, v: v) == deniable


@pytest.mark.parametrize(
    ("condition", "said"),
    [
        ("count-selected(${smokes}) > 0", "'count-selected' is not supported"),
        (". = 'yes'", "unexpected '.'"),
        ("${smokes} = 'yes' + 1", "unexpected '+'"),
        ("${later} = 'yes'", "${later} is not a question asked before this one"),
        ("${smokes} = 'maybe'", "'maybe' is not a choice of ${smokes}"),
        ("${smokes} = ", "the condition ends too early"),
        ("(" * 40 + "${smokes} = 'yes'" + ")" * 40, "nested more than 32 levels"),
        ("${smokes} = 'yes' and " * 60 + "${smokes} = 'yes'", "at most 1000 characters"),
    ],
)
def test_a_relevant_deniable_cannot_honour_names_its_row(condition: str, said: str) -> None:
    refused_with(
        simple_form(randomized("q", relevant=condition), randomized("later")),
        "survey sheet, row 3 (q), column 'relevant': ",
        said,
    )


def test_a_condition_on_a_randomized_question_is_refused_naming_the_row() -> None:
    data = simple_form(randomized("q"), randomized("r", relevant="${q} = 'yes'"))
    refused_with(data, "survey sheet, row 4 (r), column 'relevant': ", "reveal")


# -- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "where", "said"),
    [
        (["date", "when", "When?"], "row 3 (when), column 'type'", "cannot honour 'date'"),
        (["calculate", "c", "C"], "row 3 (c), column 'type'", "cannot honour 'calculate'"),
        (["begin repeat", "r", "R"], "rows 3-4 (the repeat r", "cannot honour a repeat"),
        (["integer", "n", "N?", None, ". > 3", "rr", 1], "row 3 (n), column 'constraint'", "range"),
        (
            ["integer", "n", "N?", None, None, "onebit", 1],
            "row 3 (n), column 'constraint'",
            "range",
        ),
        (["note", "n", "N", "${smokes} = 'yes'"], "row 3 (n), column 'relevant'", "own condition"),
        (
            ["select_one yes_no", "Bad.Name", "Q?", None, None, "rr", 1],
            "row 3 (Bad.Name), column 'name'",
            "cannot be a question id",
        ),
        (
            ["select_one yes_no", "q", "Q?", None, None, "rr"],
            "row 3 (q), column 'deniable::epsilon'",
            "missing: give the question its epsilon",
        ),
        (
            ["select_one yes_no", "q", "Q?", None, None, "oue", 1],
            "row 3 (q), column 'deniable::mechanism'",
            "does not fit",
        ),
        (
            ["select_one yes_no", "q", None, None, None, "rr", 1],
            "row 3 (q), column 'label'",
            "a question with no text cannot be asked",
        ),
    ],
)
def test_a_row_deniable_cannot_honour_is_an_error_naming_sheet_row_and_column(
    row: list[Any], where: str, said: str
) -> None:
    refused_with(simple_form(row, randomized("other")), f"survey sheet, {where}", said)


def test_a_note_after_the_last_question_names_its_row() -> None:
    refused_with(
        simple_form(randomized(), ["note", "bye", "Thanks!"]),
        "survey sheet, row 4 (bye): a note is shown before the question after it, and no "
        "question follows",
    )


def test_languages_columns_tags_and_missing_translations() -> None:
    headers = [
        "type",
        "name",
        "label::English (en)",
        "label::Français (xx)",
        "deniable::mechanism",
        "deniable::epsilon",
    ]
    choices = [
        ["list_name", "name", "label::English (en)", "label::Français (xx)"],
        ["yes_no", "yes", "Yes", "Oui"],
        ["yes_no", "no", "No", "Non"],
    ]
    rows = [headers, ["select_one yes_no", "q", "Q?", "Q ?", "rr", 1]]
    problem = refused_with(
        workbook_bytes(rows, choices), "survey sheet, column 'label::Français (xx)'"
    )
    assert "'xx' is not a language tag deniable knows" in problem
    # A name without a tag: its tag comes from Babel's names (Français -> fr).
    untagged = [[h.replace(" (xx)", "") for h in headers], rows[1]]
    untagged_choices = [[h.replace(" (xx)", "") for h in choices[0]], *choices[1:]]
    doc = import_xlsform(workbook_bytes(untagged, untagged_choices))
    assert doc["language"] == "en" and list(doc["translations"]) == ["fr"]
    fr = [[h.replace("Français (xx)", "French (fr)") for h in headers], rows[1]]
    fr_choices = [[h.replace("Français (xx)", "French (fr)") for h in choices[0]], *choices[1:]]
    doc = import_xlsform(workbook_bytes(fr, fr_choices))
    assert doc["language"] == "en" and doc["translations"]["fr"]["title"] == "form"
    assert doc["translations"]["fr"]["questions"]["q"] == {"text": "Q ?", "options": ["Non", "Oui"]}
    # A text a translation lacks is shown in the default language, with one notice.
    fr_choices[2] = ["yes_no", "no", "No", None]
    lacking = [fr[0], ["select_one yes_no", "q", "Q?", None, "rr", 1]]
    imported = forms.read_xlsform(workbook_bytes(lacking, fr_choices))
    words = imported.document["translations"]["fr"]["questions"]["q"]
    assert words == {"text": "Q?", "options": ["No", "Oui"]}
    assert imported.notices == [
        "the translation 'fr' has no text at choices sheet rows 3; survey sheet rows 2: shown "
        "there in the default language"
    ]


def test_pyxform_refusals_become_one_line_naming_the_row() -> None:
    refused_with(
        simple_form(randomized("q", type="select_one missing")),
        "survey sheet, row 3 (q), column 'type': the choices sheet has no list 'missing'",
    )
    problem = refused_with(simple_form(randomized("q"), ["end group"]), "survey sheet, row 4: ")
    assert "end" in problem and problem.endswith("(pyxform, as ODK reads the form)")


def test_not_a_workbook_and_damaged_zips() -> None:
    assert one(b"id,title\n").startswith("not an .xlsx workbook")
    assert "not an .xlsx workbook" in one(b"PK\x03\x04" + b"\0" * 100)


def test_limits_are_checked_before_parsing() -> None:
    too_big = b"PK" + b"\0" * forms.MAX_FORM_BYTES
    assert one(too_big).startswith(f"the file has {len(too_big):,} bytes")
    # A zip bomb: megabytes of zeros that compress to almost nothing.
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("xl/worksheets/sheet1.xml", "w") as member:
            chunk = b"\0" * (1 << 20)
            for _ in range(forms.MAX_UNPACKED_BYTES // len(chunk) + 1):
                member.write(chunk)
    assert len(bomb.getvalue()) < forms.MAX_FORM_BYTES
    assert "unpacks to more than" in one(bomb.getvalue())
    # Too many members.
    crowd = io.BytesIO()
    with zipfile.ZipFile(crowd, "w") as archive:
        for i in range(forms.MAX_MEMBERS + 1):
            archive.writestr(f"f{i}.xml", b"")
    assert "files" in one(crowd.getvalue())


def test_a_member_lying_about_its_size_is_not_inflated_past_it() -> None:
    honest = io.BytesIO()
    with zipfile.ZipFile(honest, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/workbook.xml", b"<a>" + b" " * (8 << 20) + b"</a>")
    data = bytearray(honest.getvalue())
    # Declare 100 bytes in the local header (offset 22) and the central directory (offset 24).
    local = data.index(b"PK\x03\x04")
    central = data.index(b"PK\x01\x02")
    data[local + 22 : local + 26] = (100).to_bytes(4, "little")
    data[central + 24 : central + 28] = (100).to_bytes(4, "little")
    assert "not an .xlsx workbook" in one(bytes(data))


def test_entities_in_the_workbook_are_one() -> None:
    good = io.BytesIO(simple_form(randomized()))
    out = io.BytesIO()
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            body = source.read(info)
            if info.filename == "xl/workbook.xml":
                body = b'<!DOCTYPE x [<!ENTITY a "aaaa">]>' + body
            target.writestr(info.filename, body)
    assert "declares a DTD or entities" in one(out.getvalue())


def test_too_many_survey_rows_are_refused_at_the_first_row_over() -> None:
    rows = [randomized(f"q{i}") for i in range(forms.MAX_SURVEY_ROWS + 5)]
    message = one(simple_form(*rows))
    assert message.startswith(f"survey sheet, row {forms.MAX_SURVEY_ROWS + 2}: more than")


def test_the_example_document_is_stable() -> None:
    """Importing the same bytes twice gives the same document (nothing depends on order of
    dictionaries or time)."""
    data = EXAMPLE.read_bytes()
    first = import_xlsform(data)
    assert import_xlsform(copy.copy(data)) == first


def test_a_missing_translated_note_or_hint_shows_the_default_with_a_notice() -> None:
    headers = [
        "type",
        "name",
        "label::English (en)",
        "label::French (fr)",
        "hint::English (en)",
        "deniable::mechanism",
        "deniable::epsilon",
    ]
    choices = [
        ["list_name", "name", "label::English (en)", "label::French (fr)"],
        ["yes_no", "yes", "Yes", "Oui"],
        ["yes_no", "no", "No", "Non"],
    ]
    rows = [
        headers,
        ["note", "hello", "Welcome.", None],
        ["select_one yes_no", "q", "Q?", "Q ?", "Help.", "rr", 1],
    ]
    imported = forms.read_xlsform(workbook_bytes(rows, choices))
    words = imported.document["translations"]["fr"]["questions"]["q"]
    assert words == {"text": "Q ?", "options": ["Non", "Oui"], "hint": "Help.", "note": "Welcome."}
    assert imported.notices == [
        "the translation 'fr' has no text at survey sheet rows 2, 3: shown there in the default "
        "language"
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=80))
def test_any_relevant_text_translates_or_is_refused(text: str) -> None:
    try:
        tree = relevance.parse_xlsform(text)
    except relevance.ConditionError:
        return
    deniable = relevance.to_deniable(tree, lambda q, v: v)
    assert relevance.to_deniable(conditions.parse(deniable).tree, lambda q, v: v) == deniable


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_damaged_workbook_is_refused_in_one_line_never_a_crash(data: st.DataObject) -> None:
    raw = bytearray(EXAMPLE.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    try:
        import_xlsform(bytes(raw))
    except XLSFormError as exc:
        assert exc.problems and all("\n" not in problem for problem in exc.problems)


def test_a_design_and_the_survey_settings_come_back_from_an_export() -> None:
    doc = {
        "id": "designed",
        "title": "Designed",
        "description": "With strata.",
        "enrollment": "invite",
        "closes_at": "2031-01-01T00:00:00Z",
        "device": "shared",
        "questions": [
            {
                "id": "region",
                "text": "Region?",
                "type": "categorical",
                "mechanism": "none",
                "options": ["north", "south"],
            },
            {
                "id": "q",
                "text": "Q?",
                "type": "binary",
                "mechanism": "coins",
                "coins": {"truth": "1/2", "yes": "1/3"},
            },
        ],
        "design": {"strata": "region", "population": {"north": 1000, "south": 3000}},
    }
    survey = Survey.from_dict(doc)
    again = import_xlsform(export_xlsform(survey))
    assert again["design"] == survey.to_dict()["design"] and again["device"] == "shared"
    assert again["enrollment"] == "invite" and again["description"] == "With strata."
    assert Survey.from_dict(again).hash == survey.hash


CELL = st.one_of(
    st.none(),
    st.integers(-(10**30), 10**30),
    st.sampled_from(["rr", "none", "onebit", "hcms", "1", "0.5", "²", "1e999", "${smokes}"]),
    st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=40),
)


KINDS = ["integer", "text", "select_one yes_no", "select_multiple yes_no", "note", "begin group"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(KINDS), st.lists(CELL, min_size=len(HEADERS) + 2, max_size=len(HEADERS) + 2))
def test_any_cells_import_or_are_refused_in_one_line(kind: str, cells: list[Any]) -> None:
    headers = [*HEADERS, "deniable::keep", "deniable::k", "hint"]
    try:
        data = simple_form([kind, *cells], headers=headers)
    except ValueError:  # a text openpyxl will not write
        return
    try:
        Survey.from_dict(import_xlsform(data))
    except XLSFormError as exc:
        assert exc.problems and all("\n" not in problem for problem in exc.problems)


def test_survey_import_prints_a_forms_bidi_override_as_a_json_escape(runner, tmp_path):
    # The document went to the terminal with ensure_ascii=False and nothing escaped: a label's
    # U+202E reordered the printed lines (the reader refuses C0/C1 controls, not overrides).
    from deniable.aggregator.cli.core import cli

    form = tmp_path / "form.xlsx"
    form.write_bytes(
        workbook_bytes(
            [["type", "name", "label"], ["select_one yn", "q", "Do you \u202eon?"]],
            [["list_name", "name", "label"], ["yn", "yes", "Y"], ["yn", "no", "N"]],
            [["form_id", "form_title", "deniable::epsilon"], ["evil", "T\u202e", 1]],
        )
    )
    result = runner.invoke(cli, ["survey", "import", str(form)])
    assert result.exit_code == 0, result.output
    assert "\u202e" not in result.stdout and "\\u202e" in result.stdout
    assert json.loads(result.stdout)["title"] == "T\u202e"  # the same document
