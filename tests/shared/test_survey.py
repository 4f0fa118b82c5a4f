"""Survey validation, resolution, the resolved form and its hash."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.shared import Survey, SurveyError, canonical_json, sha256_hex
from tests.shared.conftest import DOC


def test_resolves_every_question(doc):
    survey = Survey.from_dict(doc)
    q = survey.questions
    assert list(q) == ["smokes", "cannabis", "party", "region"]
    assert (q["smokes"].mechanism, q["cannabis"].mechanism) == ("rr", "coins")
    assert q["party"].mechanism == "grr"  # auto at eps 2, k 4
    assert q["region"].mechanism == "oue"
    assert q["smokes"].options == ["no", "yes"]
    assert q["cannabis"].epsilon == math.log(3)
    assert (q["cannabis"].p_star, q["cannabis"].q_star) == (0.75, 0.25)
    assert q["smokes"].p_star == pytest.approx(math.e / (1 + math.e), abs=1e-12)


def test_total_epsilon_is_the_sum_over_questions(doc):
    survey = Survey.from_dict(doc)
    assert survey.epsilon == pytest.approx(sum(q.epsilon for q in survey.questions.values()))
    assert survey.epsilon == pytest.approx(1.0 + math.log(3) + 2.0 + 0.5, abs=1e-9)


def test_hash_is_sha256_of_the_canonical_resolved_form(doc):
    survey = Survey.from_dict(doc)
    assert survey.hash == sha256_hex(canonical_json(survey.to_dict()))
    assert len(survey.hash) == 64


def test_resolved_form_resolves_to_itself(doc):
    survey = Survey.from_dict(doc)
    again = Survey.from_dict(json.loads(json.dumps(survey.to_dict())))
    assert again.to_dict() == survey.to_dict()
    assert again.hash == survey.hash


def test_hash_is_independent_of_key_order(doc):
    reordered = json.loads(json.dumps(doc), object_pairs_hook=lambda pairs: dict(reversed(pairs)))
    assert list(reordered) != list(doc)
    assert Survey.from_dict(reordered).hash == Survey.from_dict(doc).hash


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(title="Health habits 2027"),
        lambda d: d.update(enrollment="invite"),
        lambda d: d.update(closes_at="2027-01-01T00:00:00Z"),
        lambda d: d["questions"][0].update(epsilon=1.01),
        lambda d: d["questions"][0].update(text="Do you smoke at all?"),
        lambda d: d["questions"][1]["coins"].update(truth="2/3"),
        lambda d: d["questions"][1]["coins"].update(yes=0.4),
        lambda d: d["questions"][2].update(mechanism="oue"),
        lambda d: d["questions"][2]["options"].reverse(),
        lambda d: d["questions"].reverse(),
    ],
)
def test_hash_changes_with_any_parameter(doc, change):
    before = Survey.from_dict(doc).hash
    changed = copy.deepcopy(doc)
    change(changed)
    assert Survey.from_dict(changed).hash != before


def test_decimals_and_fractions_are_held_exactly(doc):
    doc["questions"][1]["coins"] = {"truth": "2/3", "yes": 0.5}
    survey = Survey.from_dict(doc)
    coins = survey.to_dict()["questions"][1]
    assert coins["coins"] == {"truth": "2/3", "yes": "0.5"}
    assert coins["p_star"] == "5/6" and coins["q_star"] == "1/6"
    assert survey.questions["cannabis"].epsilon == pytest.approx(math.log(5), rel=1e-15)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(id="Health 2026"), r"^id: .*'Health 2026'"),
        (lambda d: d.update(colour="red"), r"^colour: unknown field"),
        (
            lambda d: d.update(enrollment="closed"),
            r"^enrollment: expected 'open' or 'invite', got 'closed'",
        ),
        (lambda d: d.update(closes_at="next week"), r"^closes_at: expected a time"),
        (lambda d: d.update(closes_at="2026-12-31T00:00:00"), r"^closes_at: give a time zone"),
        (lambda d: d.update(questions=[]), r"^questions: expected a list of 1 to 100"),
        (lambda d: d["questions"][0].pop("epsilon"), r"^questions\[0\]\.epsilon: missing"),
        (
            lambda d: d["questions"][0].update(epsilon=0),
            r"^questions\[0\]\.epsilon: expected a number in",
        ),
        (lambda d: d["questions"][0].update(epsilon="high"), r"^questions\[0\]\.epsilon"),
        (
            lambda d: d["questions"][0].update(type="scale"),
            r"^questions\[0\]\.type: expected one of 'binary', 'categorical', 'integer', 'multi', 'text', got 'scale'",
        ),
        (
            lambda d: d["questions"][0].update(mechanism="grr"),
            r"^questions\[0\]\.mechanism: 'grr' does not fit a binary question",
        ),
        (
            lambda d: d["questions"][1]["coins"].update(truth=1.5),
            r"^questions\[1\]\.coins\.truth: a probability must lie in \[0, 1\]",
        ),
        (
            lambda d: d["questions"][1]["coins"].update(yes=0),
            r"^questions\[1\]\.coins: coins\.yes must lie strictly",
        ),
        (
            lambda d: d["questions"][1]["coins"].update(bias=0.1),
            r"^questions\[1\]\.coins: unknown parameter 'bias'",
        ),
        (
            lambda d: d["questions"][1].pop("coins"),
            r"^questions\[1\]\.coins: the coins mechanism needs its coins",
        ),
        (
            lambda d: d["questions"][1].update(epsilon=1.0),
            r"^questions\[1\]\.epsilon: 1.0 does not match",
        ),
        (
            lambda d: d["questions"][2].update(options=["A"]),
            r"^questions\[2\]\.options: expected a list of 2 to 256",
        ),
        (
            lambda d: d["questions"][2].update(options=["A", "a"]),
            r"^questions\[2\]\.options: labels must be distinct",
        ),
        (lambda d: d["questions"][2].update(options=["A", ""]), r"^questions\[2\]\.options\[1\]"),
        (
            lambda d: d["questions"][3].update(id="smokes"),
            r"^questions\[3\]\.id: 'smokes' is used twice",
        ),
        (
            lambda d: d["questions"][0].update(options=["yes", "no"]),
            r"^questions\[0\]\.options: a binary question's options are always",
        ),
        *[
            (
                lambda d, bad=bad: d["questions"][0].update(options=bad),
                r"^questions\[0\]\.options: a binary question's options are always",
            )
            for bad in (5, True, 1.5, {"no": 1, "yes": 2}, "noyes", ["no", "yes", "maybe"])
        ],
        (
            lambda d: d["questions"][0].pop("text"),
            r"^questions\[0\]\.text: expected a non-empty string",
        ),
        (lambda d: d.update(epsilon=3.0), r"^epsilon: 3.0 is not the sum"),
    ],
)
def test_errors_name_the_field_the_value_and_what_is_allowed(doc, change, message):
    change(doc)
    with pytest.raises(SurveyError, match=message):
        Survey.from_dict(doc)


@pytest.mark.parametrize("bad", [None, [], "survey", 3])
def test_a_survey_must_be_an_object(bad):
    with pytest.raises(SurveyError, match="JSON object"):
        Survey.from_dict(bad)


@pytest.mark.parametrize(
    ("qid", "value", "index"),
    [
        ("smokes", "yes", 1),
        ("smokes", "no", 0),
        ("smokes", True, 1),
        ("smokes", False, 0),
        ("smokes", 1, 1),
        ("smokes", 0, 0),
        ("smokes", "Yes", 1),
        ("party", "C", 2),
        ("party", 3, 3),
    ],
)
def test_true_answers_by_label_or_index(doc, qid, value, index):
    assert Survey.from_dict(doc).questions[qid].index_of(value) == index


@pytest.mark.parametrize(
    ("qid", "value"),
    [("smokes", "maybe"), ("smokes", 2), ("party", "E"), ("party", -1), ("party", None)],
)
def test_a_wrong_true_answer_says_what_is_allowed(doc, qid, value):
    with pytest.raises(SurveyError, match=rf"^{qid}: .* is not an answer; give one of"):
        Survey.from_dict(doc).questions[qid].index_of(value)


def test_randomize_returns_an_encoded_answer_of_the_right_kind(doc):
    survey = Survey.from_dict(doc)
    assert survey.questions["smokes"].randomize("yes") in (0, 1)
    assert survey.questions["party"].randomize("B") in range(4)
    bits = survey.questions["region"].randomize("region 3")
    assert isinstance(bits, str) and len(bits) == 16 and set(bits) <= {"0", "1"}


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
        ("0999-06-01T12:30:00Z", "0999-06-01T12:30:00Z"),
        ("1-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),  # as earlier versions stored it
    ],
)
def test_early_years_keep_four_digits_and_parse_again(doc, given, stored):
    doc["closes_at"] = given
    resolved = Survey.from_dict(doc).to_dict()
    assert resolved["closes_at"] == stored
    assert Survey.from_dict(resolved).to_dict() == resolved


@pytest.mark.parametrize("bad", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00"])
def test_a_closes_at_out_of_range_in_utc_is_a_survey_error(doc, bad):
    doc["closes_at"] = bad
    with pytest.raises(SurveyError, match=r"^closes_at: .* is out of range in UTC"):
        Survey.from_dict(doc)


@pytest.mark.parametrize(("field", "text"), [("title", "a\x00b"), ("title", "bell\x07")])
def test_control_characters_in_a_title_are_a_survey_error(doc, field, text):
    doc[field] = text
    with pytest.raises(SurveyError, match=rf"^{field}: control characters are not text"):
        Survey.from_dict(doc)


def test_control_characters_in_questions_and_labels_are_a_survey_error(doc):
    doc["questions"][0]["text"] = "Do you\x1b[31m smoke?"
    with pytest.raises(SurveyError, match=r"^questions\[0\]\.text: control characters"):
        Survey.from_dict(doc)
    doc["questions"][0]["text"] = "Do you smoke?"
    doc["questions"][2]["options"][1] = "B\x00"
    with pytest.raises(SurveyError, match=r"^questions\[2\]\.options\[1\]"):
        Survey.from_dict(doc)


def test_tabs_and_line_breaks_stay_allowed(doc):
    doc["description"] = "First line.\n\tSecond, indented."
    doc["title"] = "Title\twith a tab"
    doc["questions"][0]["text"] = "Do you\nsmoke?"
    survey = Survey.from_dict(doc)
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash


def test_a_carriage_return_is_refused_but_a_stored_one_still_loads(doc):
    """Surveys stored before carriage returns were refused may hold them: they still load."""
    doc["description"] = "First line.\r\n\tSecond, indented."
    with pytest.raises(SurveyError, match=r"^description: control characters"):
        Survey.from_dict(doc)
    survey = Survey.from_stored(doc)
    assert Survey.from_stored(survey.to_dict()).hash == survey.hash


@pytest.mark.parametrize("field", ["title", "description"])
def test_text_that_is_not_unicode_is_a_survey_error(doc, field):
    doc[field] = "caf\ud800"
    with pytest.raises(SurveyError, match=rf"^{field}: not valid Unicode"):
        Survey.from_dict(doc)


def test_closes_at_is_normalized_to_utc(doc):
    doc["closes_at"] = "2026-12-31T01:00:00+01:00"
    survey = Survey.from_dict(doc)
    assert survey.to_dict()["closes_at"] == "2026-12-31T00:00:00Z"
    from datetime import UTC, datetime

    assert not survey.is_closed(datetime(2026, 12, 30, 23, 59, tzinfo=UTC))
    assert survey.is_closed(datetime(2026, 12, 31, 0, 0, tzinfo=UTC))


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(st.characters(exclude_categories=()), max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(
    where=st.sampled_from(["survey", 0, 1, 2, 3]),
    field=st.sampled_from(
        [
            "id",
            "title",
            "text",
            "type",
            "options",
            "epsilon",
            "mechanism",
            "coins",
            "enrollment",
            "questions",
            "closes_at",
            "p_star",
            "q_star",
        ]
    ),
    value=_JSON,
)
def test_any_json_in_any_field_is_a_survey_or_a_survey_error(where, field, value):
    """Whatever a researcher posts, the answer is a survey or SurveyError, never a crash."""
    doc = copy.deepcopy(DOC)
    target = doc if where == "survey" else doc["questions"][where]
    target[field] = value
    try:
        Survey.from_dict(doc)
    except SurveyError:
        pass


def test_an_error_about_a_huge_value_stays_short(doc):
    doc["questions"] = [{"id": f"q{i}", "text": "x" * 200} for i in range(10_000)]
    with pytest.raises(SurveyError) as raised:
        Survey.from_dict(doc)
    assert len(str(raised.value)) <= 1000 and str(raised.value).startswith("questions")


def test_too_many_questions_are_counted_not_printed():
    many = [{"id": "x" * 100}] * 101
    with pytest.raises(SurveyError) as caught:
        Survey.from_dict({"id": "s", "title": "t", "enrollment": "open", "questions": many})
    assert (
        str(caught.value) == "questions: expected a list of 1 to 100 questions, got 101 questions"
    )
