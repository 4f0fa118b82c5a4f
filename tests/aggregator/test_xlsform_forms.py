"""Forms as researchers already have them (docs/xlsform.md, "Bring your ODK/Kobo form"):
pyxform's spellings, columns that only change ODK's display, metadata rows, groups, ids made
ids, plain integers, the settings' default epsilon, every problem in one run, and
--drop-unsupported, which never leaves out a row something kept depends on."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from openpyxl import Workbook

from deniable.aggregator.forms import (
    ImportedForm,
    XLSFormError,
    export_xlsform,
    import_xlsform,
    read_xlsform,
)
from deniable.shared.survey import Survey

ROOT = Path(__file__).resolve().parents[2]
YES_NO = [
    {"list_name": "yes_no", "name": "yes", "label": "Yes"},
    {"list_name": "yes_no", "name": "no", "label": "No"},
]
FRUITS = [
    {"list_name": "fruits", "name": "apple", "label": "Apple"},
    {"list_name": "fruits", "name": "pear", "label": "Pear"},
    {"list_name": "fruits", "name": "fig", "label": "Fig"},
]
PRIVACY = {"deniable::epsilon": 1}


def _sheet(book: Any, name: str, rows: list[dict[str, Any]]) -> None:
    headers: list[str] = []
    for row in rows:
        headers += [key for key in row if key not in headers]
    sheet = book.create_sheet(name)
    sheet.append(headers)
    for row in rows:
        sheet.append([row.get(h) for h in headers])


def form(
    survey: list[dict[str, Any]],
    choices: list[dict[str, Any]] | None = None,
    settings: dict[str, Any] | None = None,
    names: tuple[str, str, str] = ("survey", "choices", "settings"),
) -> bytes:
    """An .xlsx of rows given as dicts (headers in order of first appearance)."""
    book = Workbook()
    book.remove(book.active)
    _sheet(book, names[0], survey)
    _sheet(book, names[1], choices if choices is not None else [*YES_NO, *FRUITS])
    if settings is not None:
        _sheet(book, names[2], [settings])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def q(kind: str, name: str, label: str = "Question?", **cells: Any) -> dict[str, Any]:
    return {"type": kind, "name": name, "label": label, **cells}


def imported(data: bytes, **options: Any) -> ImportedForm:
    result = read_xlsform(data, **options)
    Survey.from_dict(result.document)  # the document is one deniable creates
    return result


def problems(data: bytes, **options: Any) -> list[str]:
    with pytest.raises(XLSFormError) as caught:
        read_xlsform(data, **options)
    assert all("\n" not in p for p in caught.value.problems)
    return caught.value.problems


def notice(result: ImportedForm | list[str], *parts: str) -> str:
    """The one notice holding every part."""
    notices = result.notices if isinstance(result, ImportedForm) else result
    found = [n for n in notices if all(part in n for part in parts)]
    assert len(found) == 1, notices
    return found[0]


# -- pyxform's spellings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("english", "french", "tags"),
    [
        ("label:English", "label:French", ("en", "fr")),  # one colon, as older forms write it
        ("label::English", "label::French", ("en", "fr")),  # a name without a code
        ("label::English (en)", "label::Français (fr)", ("en", "fr")),
        ("label::en", "label::fr", ("en", "fr")),
        ("label::english", "label::Français", ("en", "fr")),  # any case; a language's own name
        ("label::Swahili (swa)", "label::Arabic", ("sw", "ar")),  # ISO 639-2 code; a name
    ],
)
def test_label_languages_as_pyxform_spells_them(english: str, french: str, tags: Any) -> None:
    survey = [{"type": "select_one yes_no", "name": "q", english: "Q?", french: "Q ?"}]
    choices = [
        {"list_name": "yes_no", "name": n, english: n.title(), french: f"{n}!"}
        for n in ("yes", "no")
    ]
    doc = imported(form(survey, choices, PRIVACY)).document
    assert doc["language"] == tags[0] and list(doc["translations"]) == [tags[1]]
    words = doc["translations"][tags[1]]["questions"]["q"]
    assert words == {"text": "Q ?", "options": ["no!", "yes!"]}


def test_default_language_as_a_name_and_an_unknown_language() -> None:
    survey = [
        {"type": "select_one yes_no", "name": "q", "label::English": "Q?", "label::Dutch": "V?"}
    ]
    choices = [
        {"list_name": "yes_no", "name": n, "label::English": n, "label::Dutch": n}
        for n in ("yes", "no")
    ]
    doc = imported(form(survey, choices, {**PRIVACY, "default_language": "Dutch"})).document
    assert doc["language"] == "nl" and list(doc["translations"]) == ["en"]
    assert doc["questions"][0]["text"] == "V?"
    survey[0]["label::Klingonese"] = "Q!"
    found = problems(form(survey, choices, PRIVACY))
    assert found == [
        "survey sheet, column 'label::Klingonese': 'Klingonese' is not a language Babel knows by "
        "name; write its tag in parentheses, e.g. 'Klingonese (xx)' with its BCP 47 tag"
    ]


def test_select_spellings_and_or_other() -> None:
    survey = [
        q("select one from yes_no", "smokes"),
        q("select all that apply from fruits", "ate"),
        q("select_one fruits or_other", "best"),
        q("select one from yes_no or specify other", "pets"),
    ]
    result = imported(form(survey, settings=PRIVACY))
    by_id = {x["id"]: x for x in result.document["questions"]}
    assert [by_id[i]["type"] for i in ("smokes", "ate", "best", "pets")] == [
        "binary",
        "multi",
        "categorical",
        "categorical",  # yes, no and other: no longer a yes/no
    ]
    assert by_id["best"]["options"] == ["Apple", "Pear", "Fig", "Other"]
    assert by_id["pets"]["options"] == ["Yes", "No", "Other"]
    notice(result, "row 4 (best)", "or_other adds the option 'Other'", "not asked")


def test_settings_title_id_string_and_display_settings() -> None:
    settings = {
        **PRIVACY,
        "title": "Maternal health",
        "id_string": "MCH_v1",
        "version": "2024010101",
        "instance_name": "concat(${q}, 'x')",
        "style": "pages",
    }
    result = imported(form([q("select_one yes_no", "q")], settings=settings))
    assert result.document["id"] == "mch-v1" and result.document["title"] == "Maternal health"
    notice(result, "'MCH_v1' is not a survey id; the survey's id is 'mch-v1'")
    notice(result, "settings sheet: ignored", "'version'", "'instance_name'", "'style'")
    # Without an id, the file's name gives it, made an id too.
    doc = imported(form([q("select_one yes_no", "q")], settings=PRIVACY), filename="My Form_2.xls")
    assert doc.document["id"] == "my-form-2"


def test_column_and_sheet_names_are_case_insensitive() -> None:
    survey = [
        {
            "Type": "select_one yes_no",
            "NAME": "gate",
            "Label": "Gate?",
            "Deniable::Mechanism": "none",
        },
        {"Type": "select_one yes_no", "NAME": "q", "Label": "Q?", "Relevant": "${gate} = 'yes'"},
    ]
    choices = [
        {"List Name": c["list_name"], "Name": c["name"], "LABEL": c["label"]} for c in YES_NO
    ]
    data = form(
        survey, choices, {"Form_Title": "Cased", **PRIVACY}, ("Survey", "CHOICES", "Settings")
    )
    doc = imported(data).document
    assert doc["title"] == "Cased" and doc["questions"][1]["relevant"] == "gate == 'yes'"


# -- what is ignored, dropped, flattened ---------------------------------------------------------


DISPLAY = {
    "appearance": "minimal",
    "required_message": "Please answer",
    "constraint_message": "Too big",
    "read_only": "false",
    "image": "a.png",
    "audio": "a.mp3",
    "video": "a.mp4",
    "guidance_hint": "Ask slowly",
    "autoplay": "audio",
    "body::accuracyThreshold": "5",
    "tutorial notes": "a comment column",
}


def test_display_only_columns_are_ignored_with_one_notice_each() -> None:
    survey = [
        q("select_one yes_no", "a", **DISPLAY, required="no"),
        q("select_one yes_no", "b", **DISPLAY, required="yes"),
        q("integer", "n", constraint=". != 7", **{"deniable::mechanism": "none"}),
        q(
            "select_one fruits",
            "f",
            default="apple",
            choice_filter="name != ''",
            **{"deniable::mechanism": "none"},
        ),
    ]
    result = imported(form(survey, settings=PRIVACY))
    assert [x["id"] for x in result.document["questions"]] == ["a", "b", "n", "f"]
    for column in DISPLAY:
        notice(result, f"survey sheet, column {column!r}: ignored")
    notice(result, "column 'required': ignored on row 2:", "deniable asks every question")
    notice(result, "column 'constraint': ignored on row 4:", "integer's range")
    notice(result, "column 'default': ignored on row 5")
    notice(result, "column 'choice_filter': ignored on row 5")
    assert len(result.notices) == len(DISPLAY) + 5  # and the plain integer's range


def test_default_or_choice_filter_on_a_randomized_question_cannot_be_honoured() -> None:
    survey = [
        q("select_one fruits", "f", default="apple"),
        q("select_one yes_no", "g", choice_filter="1"),
    ]
    found = problems(form(survey, settings=PRIVACY))
    assert found[0].startswith("survey sheet, row 2 (f), column 'default': deniable cannot honour")
    assert found[1].startswith("survey sheet, row 3 (g), column 'choice_filter': ")
    assert "(deniable::mechanism none)" in found[0] and "--drop-unsupported" in found[1]


METADATA = [
    "start",
    "end",
    "today",
    "deviceid",
    "subscriberid",
    "simserial",
    "phonenumber",
    "username",
    "email",
    "audit",
    "start-geopoint",
    "background-audio",
]


def test_metadata_rows_are_dropped_with_one_notice_saying_why() -> None:
    survey = [
        {"type": kind, "name": kind if kind == "audit" else f"m{i}"}
        for i, kind in enumerate(METADATA)
    ]
    survey.append(q("select_one yes_no", "q"))
    result = imported(form(survey, settings=PRIVACY))
    assert [x["id"] for x in result.document["questions"]] == ["q"]
    said = notice(result, "left out the metadata rows")
    assert "m0 (row 2)" in said and "and 4 more" in said
    assert said.endswith("because they identify the respondent or the device")


def test_groups_are_flattened_their_labels_notes_their_conditions_anded() -> None:
    survey = [
        q("select_one yes_no", "gate", "Gate?", **{"deniable::mechanism": "none"}),
        {
            "type": "begin group",
            "name": "outer",
            "label": "About you",
            "relevant": "${gate} = 'yes'",
        },
        q("select_one yes_no", "pet", "Pet?", **{"deniable::mechanism": "none"}),
        {"type": "begin_group", "name": "inner", "label": "Your pets", "appearance": "field-list"},
        {"type": "note", "name": "n", "label": "Take your time."},
        q("select_one yes_no", "dog", "Dog?", relevant="${pet} = 'yes'"),
        {"type": "end_group"},
        {"type": "end group", "name": "outer"},
        {"type": "begin group", "name": "empty", "label": "Nothing here"},
        {"type": "date", "name": "when", "label": "When?"},
        {"type": "end group"},
        q("select_one yes_no", "last", "Last?"),
    ]
    result = imported(form(survey, settings=PRIVACY), drop_unsupported=True)
    by_id = {x["id"]: x for x in result.document["questions"]}
    assert by_id["pet"]["note"] == "About you" and by_id["pet"]["relevant"] == "gate == 'yes'"
    assert by_id["dog"]["note"] == "Your pets\n\nTake your time."
    assert by_id["dog"]["relevant"] == "(gate == 'yes') and (pet == 'yes')"
    assert "note" not in by_id["last"] and "relevant" not in by_id["last"]
    notice(result, "row 10 (empty): the group's label is not shown")
    survey_ = Survey.from_dict(result.document)
    assert "dog" not in survey_.relevant({"gate": "no"})
    assert "dog" in survey_.relevant({"gate": "yes", "pet": "yes"})


def test_names_are_made_ids_and_two_that_become_one_are_an_error() -> None:
    survey = [
        q("select_one yes_no", "Gate", **{"deniable::mechanism": "none"}),
        q("select_multiple fruits", "Fruits", relevant="${Gate} = 'yes'"),
    ]
    result = imported(form(survey, settings=PRIVACY))
    assert [x["id"] for x in result.document["questions"]] == ["gate", "fruits"]
    assert result.document["questions"][1]["relevant"] == "gate == 'yes'"
    notice(result, "question names made ids (lower case): Gate → gate (row 2), Fruits → fruits")
    survey.append(q("select_one yes_no", "fruits"))
    assert problems(form(survey, settings=PRIVACY)) == [
        "survey sheet, row 4 (fruits), column 'name': 'fruits' is also the name of row 3 "
        "(Fruits) once lower-cased; give each question its own name"
    ]


def test_plain_integers_need_no_range_randomized_ones_do() -> None:
    plain = {"deniable::mechanism": "none"}
    survey = [
        q("integer", "age", **plain),
        q("integer", "months", constraint=". <= 72", **plain),
        q("int", "years", constraint="${years} >= 5", **plain),
        q("integer", "drinks", constraint=". > -1 and . < 31"),
        q("percentage", "share", **plain),
    ]
    result = imported(form(survey, settings=PRIVACY))
    ranges = {x["id"]: (x["min"], x["max"]) for x in result.document["questions"]}
    assert ranges == {
        "age": (0, 1000),
        "months": (0, 72),
        "years": (5, 1005),
        "drinks": (0, 30),
        "share": (0, 100),
    }
    said = notice(result, "plain integers without a range")
    assert "age 0 to 1000 (row 2), months 0 to 72 (row 3), years 5 to 1005 (row 4)" in said
    found = problems(form([q("integer", "n", constraint=". >= 1")], settings=PRIVACY))
    assert found == [
        "survey sheet, row 2 (n), column 'constraint': a randomized integer needs its range, e.g. "
        "'. >= 0 and . <= 120' (got '. >= 1'); give it, or ask the question plainly "
        "(deniable::mechanism none)"
    ]


def test_the_settings_epsilon_is_every_questions_default() -> None:
    survey = [
        q("select_one yes_no", "a"),
        q("select_one fruits", "b", **{"deniable::epsilon": 2}),
        q("select_multiple fruits", "c", **{"deniable::mechanism": "none"}),
        q("select_one fruits", "d", **{"deniable::mechanism": "grr"}),
        q("text", "e"),
    ]
    doc = imported(form(survey, settings={"deniable::epsilon": 0.5})).document
    survey_ = Survey.from_dict(doc)
    got = {qid: (x.mechanism, x.epsilon) for qid, x in survey_.questions.items()}
    assert got["a"] == ("rr", pytest.approx(0.5)) and got["b"][1] == pytest.approx(2.0)
    assert got["c"] == ("none", None) and got["d"] == ("grr", pytest.approx(0.5))
    assert got["e"] == ("hcms", pytest.approx(0.5))
    assert problems(form(survey, settings={"deniable::epsilon": "high"})) == [
        "settings sheet, row 2, column 'deniable::epsilon': expected a positive number (the "
        "epsilon of every question that gives none), got 'high'"
    ]


def test_a_form_with_no_privacy_choice_is_refused_with_one_message() -> None:
    survey = [q("select_one yes_no", f"q{i}") for i in range(10)]
    found = problems(form(survey))
    assert len(found) == 1
    assert found[0].startswith(
        "the form makes no privacy choice: add a column 'deniable::epsilon' to the settings sheet"
    )
    assert "q0 (row 2), q1 (row 3)" in found[0] and "and 2 more" in found[0]


def test_every_problem_is_named_in_one_run() -> None:
    survey = [
        q("select_one yes_no", "gate", **{"deniable::mechanism": "none"}),
        q("date", "when"),
        q("select_one colours", "colour"),
        q("select_one yes_no", "a", relevant="${nope} = 'yes'"),
        q("select_one yes_no", "b", **{"deniable::epsilon": "lots"}),
        q("select_one yes_no", "Gate"),
        q("integer", "n", **{"deniable::mechanism": "onebit"}),
    ]
    found = problems(form(survey, settings=PRIVACY))
    starts = [p.split(": ", 1)[0] for p in found]
    assert starts[:6] == [
        "survey sheet, row 3 (when), column 'type'",
        "survey sheet, row 4 (colour), column 'type'",
        "survey sheet, row 5 (a), column 'relevant'",
        "survey sheet, row 6 (b), column 'deniable::epsilon'",
        "survey sheet, row 7 (Gate), column 'name'",
        "survey sheet, row 8 (n), column 'constraint'",
    ]
    assert found[-1].endswith("(pyxform, as ODK reads the form)")  # its list is missing too


# -- --drop-unsupported ----------------------------------------------------------------------


def test_drop_unsupported_leaves_out_what_cannot_be_honoured_each_named() -> None:
    survey = [
        {"type": "start", "name": "start"},
        q("select_one yes_no", "smokes", **{"deniable::mechanism": "none"}),
        q("geopoint", "where"),
        q("image", "photo"),
        q("select_one yes_no", "piped", "Still ${smokes}?"),
        {"type": "calculate", "name": "c", "calculation": "1 + 1"},
        {"type": "begin repeat", "name": "member", "label": "Members"},
        q("text", "member_name"),
        {"type": "end repeat"},
        q("select_one yes_no", "q", relevant="${smokes} = 'yes'"),
    ]
    data = form(survey, settings=PRIVACY)
    found = problems(data)
    assert len(found) == 5 and all("--drop-unsupported" in p for p in found)
    result = imported(data, drop_unsupported=True)
    assert [x["id"] for x in result.document["questions"]] == ["smokes", "q"]
    notice(result, "row 4 (where): left out: deniable cannot honour 'geopoint'")
    notice(result, "row 5 (photo): left out")
    notice(result, "row 6 (piped): left out: its text shows the answer to ${smokes}")
    notice(result, "row 7 (c): left out: deniable cannot honour 'calculate'")
    notice(result, "rows 8-10 (the repeat member and the 2 rows in it): left out")
    notice(result, "left out the metadata rows start (row 2)")


def test_drop_unsupported_keeps_a_row_something_depends_on_an_error() -> None:
    survey = [
        q("date", "dob", "Born?"),
        {"type": "calculate", "name": "adult", "calculation": "${dob} < today()"},
        q("select_one yes_no", "q", relevant="${adult} = 1"),
        q("select_one yes_no", "r", relevant="${dob} != ''"),
        {"type": "deviceid", "name": "device"},
        q("select_one yes_no", "s", relevant="${device} != ''"),
    ]
    found = problems(form(survey, settings=PRIVACY), drop_unsupported=True)
    assert found == [
        "survey sheet, row 2 (dob): row 5 (r) depends on it (its 'relevant' names ${dob}), so it "
        "cannot be left out, and deniable cannot honour 'date' (its questions are select_one, "
        "select_multiple, integer and text, and note rows); take the condition off row 5, or "
        "change this row into a question deniable asks",
        "survey sheet, row 3 (adult): row 4 (q) depends on it (its 'relevant' names ${adult}), so "
        "it cannot be left out, and deniable cannot honour 'calculate' (its questions are "
        "select_one, select_multiple, integer and text, and note rows); take the condition off "
        "row 4, or change this row into a question deniable asks",
        "survey sheet, row 6 (device): row 7 (s) depends on it (its 'relevant' names ${device}), "
        "so it cannot be left out, and it is a metadata row, which deniable never collects (it "
        "identifies the respondent or the device); take the condition off row 7, or change this "
        "row into a question deniable asks",
    ]


def test_was_it_answered_is_was_it_asked() -> None:
    plain = {"deniable::mechanism": "none"}
    survey = [
        q("select_one yes_no", "gate", **plain),
        q("select_one fruits", "fruit", relevant="${gate} = 'yes'"),  # randomized
        q("select_one yes_no", "a", relevant="${fruit} != ''"),
        q("select_one yes_no", "b", relevant="${fruit} = ''"),
        q("select_one yes_no", "c", relevant="${gate} != '' and ${a} = ''"),
    ]
    doc = imported(form(survey, settings=PRIVACY)).document
    by_id = {x["id"]: x for x in doc["questions"]}
    assert by_id["a"]["relevant"] == "(gate == 'yes')"
    assert by_id["b"]["relevant"] == "not (gate == 'yes')"
    assert by_id["c"]["relevant"] == "not (gate == 'yes')"
    survey.append(q("select_one yes_no", "never", relevant="${gate} = ''"))
    assert problems(form(survey, settings=PRIVACY)) == [
        "survey sheet, row 7 (never): its condition (with its groups') is never true, so it is "
        "never asked; correct the condition or remove the row"
    ]


# -- labels, .xls, the round trip ------------------------------------------------------------


def test_labels_keep_odks_markdown_and_html_as_written() -> None:
    label = "**Bold** and *italic*\nsecond line <b>not bold</b>"
    doc = imported(form([q("select_one yes_no", "q", label)], settings=PRIVACY)).document
    assert doc["questions"][0]["text"] == label


def test_a_damaged_xls_is_refused_in_one_line() -> None:
    ole2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
    for data in (ole2, ole2 + b"\0" * 600, ole2 + bytes(range(256)) * 8):
        found = problems(data)
        assert len(found) == 1 and found[0].startswith("not a readable .xls workbook")


def test_a_categorical_no_yes_stays_categorical_through_the_round_trip() -> None:
    doc = {
        "id": "no-yes",
        "title": "No or yes",
        "questions": [
            {
                "id": "q",
                "text": "Q?",
                "type": "categorical",
                "options": ["no", "yes"],
                "epsilon": 1,
            },
            {"id": "b", "text": "B?", "type": "binary", "epsilon": 1},
            {
                "id": "n",
                "text": "N?",
                "type": "integer",
                "min": 0,
                "max": 1000,
                "mechanism": "none",
            },
        ],
    }
    survey = Survey.from_dict(doc)
    again = import_xlsform(export_xlsform(survey))
    assert [x["type"] for x in again["questions"]] == ["categorical", "binary", "integer"]
    assert Survey.from_dict(again).hash == survey.hash


def _example_surveys() -> list[tuple[str, Survey]]:
    found = []
    for path in sorted((ROOT / "examples").glob("*.json")) + sorted(
        (ROOT / "aggregator" / "examples").glob("*.json")
    ):
        found.append((path.name, Survey.from_dict(json.loads(path.read_text("utf-8")))))
    for path in sorted((ROOT / "examples").glob("*.xlsx")):
        found.append((path.name, Survey.from_dict(import_xlsform(path.read_bytes()))))
    return found


@pytest.mark.parametrize(("name", "survey"), _example_surveys(), ids=lambda v: str(v)[:30])
def test_every_example_survey_keeps_its_hash_through_export_and_import(
    name: str, survey: Survey
) -> None:
    again = Survey.from_dict(import_xlsform(export_xlsform(survey)))
    assert again.hash == survey.hash, name
