"""Integer and multi questions at the aggregator: ingestion (both stores), results JSON and CSV
against hand-computed values, the HTTP API, breakdowns and regression with them."""

from __future__ import annotations

import copy
import csv
import io
import math
from fractions import Fraction as F
from typing import Any

import pytest

from deniable.aggregator import AnalysisError, analyze, breakdown, crosstab, regress
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.store import Store
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.statuses import report_status
from deniable.shared import Survey, make_report, sign_report
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import NUMBERS_DOC, NUMBERS_TRUTH

SURVEY = Survey.from_dict(NUMBERS_DOC)
P = float(SURVEY.questions["drinks"].p_star)
Q = 1 - P

#: Noisy answers as sent: (drinks bit, used bits, age, apps bits).
ROWS = [(1, "101", 20, "10"), (0, "100", 30, "11"), (1, "001", 40, "00"), (1, "110", 50, "01")]
ANSWERS = [{"answers": {"drinks": d, "used": u, "age": a, "apps": s}} for d, u, a, s in ROWS]


@pytest.fixture
def numbers(store: Store) -> Survey:
    record, _ = create_survey(store, copy.deepcopy(NUMBERS_DOC), who=OPERATOR)
    return Survey.from_dict(record.resolved)


def test_onebit_mean_is_the_debiased_share_of_ones_on_the_questions_scale():
    doc = analyze(SURVEY, ANSWERS, verify=False)
    drinks = doc["questions"][0]
    assert (drinks["type"], drinks["min"], drinks["max"], drinks["n"]) == ("integer", 0, 20, 4)
    (row,) = drinks["options"]
    lam = 3 / 4
    assert row["option"] == "mean" and row["support"] == 3 and row["count"] is None
    assert row["estimate"] == pytest.approx(20 * (lam - Q) / (P - Q))
    se = 20 * math.sqrt(lam * (1 - lam) / 3) / (P - Q)  # the unbiased variance, n - 1
    assert row["stderr"] == pytest.approx(se)
    assert row["share"] == pytest.approx(min(row["estimate"], 20))
    assert 0 <= row["ci_low"] < row["ci_high"] <= 20


def test_a_plain_integer_gives_the_sample_mean_and_s_over_root_n():
    age = analyze(SURVEY, ANSWERS, verify=False)["questions"][2]
    (row,) = age["options"]
    assert age["epsilon"] is None
    assert row["estimate"] == 35.0 and row["support"] == 4
    s = math.sqrt(sum((x - 35) ** 2 for x in (20, 30, 40, 50)) / 3)
    assert row["stderr"] == pytest.approx(s / 2)
    assert row["ci_low"] == pytest.approx(35 - 1.959963984540054 * s / 2)


def test_multi_rows_estimate_each_options_share_and_need_not_sum_to_one():
    used = analyze(SURVEY, ANSWERS, verify=False)["questions"][1]
    pq = SURVEY.questions["used"]
    p, q = float(pq.p_star), float(pq.q_star)
    ones = [3, 1, 2]  # the bits set per option over ROWS
    for row, label, c in zip(used["options"], ["cannabis", "ecstasy", "LSD"], ones, strict=True):
        assert row["option"] == label and row["support"] == c
        assert row["estimate"] == pytest.approx((c / 4 - q) / (p - q))
        assert row["share"] == pytest.approx(min(max(row["estimate"], 0.0), 1.0))
    apps = analyze(SURVEY, ANSWERS, verify=False)["questions"][3]
    assert [r["estimate"] for r in apps["options"]] == [0.5, 0.5]  # plain: the sample shares


def test_the_csv_has_a_mean_row_with_an_empty_count_and_a_row_per_option():
    app_csv = analyze_csv(analyze(SURVEY, ANSWERS, verify=False))
    mean = next(r for r in app_csv if r["question"] == "drinks")
    assert mean["option"] == "mean" and mean["count"] == ""
    assert [r["option"] for r in app_csv if r["question"] == "used"] == [
        "cannabis",
        "ecstasy",
        "LSD",
    ]


def analyze_csv(doc: dict[str, Any]) -> list[dict[str, str]]:
    from deniable.aggregator.stats.estimate import results_csv

    return list(csv.DictReader(io.StringIO(results_csv(doc))))


def test_reports_are_tallied_once_per_option_in_either_store(store: Store, numbers: Survey):
    for truth in (NUMBERS_TRUTH, {"drinks": 20, "used": [], "age": 99, "apps": ["mail", "chat"]}):
        (outcome,) = ingest(store, make_report(numbers, truth, generate_key()))
        assert outcome.result == "accepted"
    n, support = store.tallies(numbers.id)
    assert n == 2
    assert (
        support["age"][40 - 18] == 1 and support["age"][99 - 18] == 1 and sum(support["age"]) == 2
    )
    assert support["apps"] == [1, 1]
    assert sum(support["drinks"]) == 2 and len(support["used"]) == 3


@pytest.mark.parametrize(
    ("qid", "value"),
    [("drinks", 2), ("drinks", 0.0), ("drinks", True), ("drinks", "1")]
    + [("used", "10"), ("used", "1012"), ("used", 5), ("used", ["1", "0", "1"])]
    + [("age", 17), ("age", 100), ("age", 40.5), ("age", False), ("apps", "1")],
)
def test_malformed_answers_are_refused_with_the_question_and_nothing_is_stored(
    store: Store, numbers: Survey, qid: str, value: Any
):
    key = generate_key()
    report = make_report(numbers, NUMBERS_TRUTH, key)
    report = sign_report({**report, "answers": {**report["answers"], qid: value}}, key)
    before = store.tallies(numbers.id), list(store.iter_report_bodies(numbers.id))
    (outcome,) = ingest(store, report)
    assert (outcome.result, report_status(outcome)) == ("rejected", 422)
    assert qid in (outcome.reason or "")
    assert (store.tallies(numbers.id), list(store.iter_report_bodies(numbers.id))) == before


def test_the_http_api_takes_the_types_and_answers_with_their_rows(client, auth):
    created = client.post("/api/v1/surveys", json=copy.deepcopy(NUMBERS_DOC), headers=auth)
    assert created.status_code == 201, created.json
    survey = Survey.from_dict(client.get("/api/v1/surveys/numbers").json["survey"])
    for drinks in (0, 10, 20):
        report = make_report(survey, {**NUMBERS_TRUTH, "drinks": drinks}, generate_key())
        assert client.post("/api/v1/reports", json=report).status_code == 201
    key = generate_key()
    bad = make_report(survey, NUMBERS_TRUTH, key)
    refused = client.post(
        "/api/v1/reports", json=sign_report({**bad, "answers": {**bad["answers"], "age": 120}}, key)
    )
    assert refused.status_code == 422 and "age" in refused.get_data(as_text=True)
    results = client.get("/api/v1/surveys/numbers/results", headers=auth).json
    assert results["n"] == 3
    drinks, used, age, apps = results["questions"]
    assert drinks["options"][0]["option"] == "mean" and age["options"][0]["estimate"] == 40
    assert [o["option"] for o in used["options"]] == ["cannabis", "ecstasy", "LSD"]
    assert apps["options"][0]["estimate"] == 0.0
    text = client.get("/api/v1/surveys/numbers/results.csv", headers=auth).get_data(as_text=True)
    assert "\nage,mean,3,40," in text or "\nage,mean,3,40.0," in text


def test_a_bad_integer_question_over_http_is_422_naming_the_field(client, auth):
    doc = copy.deepcopy(NUMBERS_DOC)
    doc["questions"][0]["max"] = 0
    answer = client.post("/api/v1/surveys", json=doc, headers=auth)
    assert answer.status_code == 422
    assert "questions[0].max" in answer.json["detail"]
    assert client.get("/api/v1/surveys/numbers", headers=auth).status_code == 404


BREAKDOWN_DOC = {
    "id": "by-group",
    "title": "By group",
    "questions": [
        {"id": "drinks", "text": "Drinks?", "type": "integer", "min": 0, "max": 10,
         "mechanism": "onebit", "onebit": {"keep": "3/4"}},
        {"id": "used", "text": "Used?", "type": "multi", "options": ["a", "b"],
         "mechanism": "rr", "rr": {"keep": "3/4"}},
        {"id": "sex", "text": "Sex?", "type": "categorical", "options": ["f", "m"],
         "mechanism": "none"},
        {"id": "age", "text": "Age?", "type": "integer", "min": 18, "max": 90,
         "mechanism": "none"},
    ],
}  # fmt: skip


def _rows(*rows: tuple[int, str, int, int]) -> list[dict[str, Any]]:
    return [{"answers": {"drinks": d, "used": u, "sex": s, "age": a}} for d, u, s, a in rows]


def test_a_mean_broken_down_by_a_plain_group_is_each_groups_mean():
    data = _rows((1, "10", 0, 30), (1, "11", 0, 40), (0, "00", 1, 50), (1, "01", 1, 60))
    doc = breakdown(BREAKDOWN_DOC, data, "drinks", "sex", verify=False)
    f, m = doc["groups"]
    # keep 3/4: mean = 10 (lambda - 1/4) / (1/2); f: lambda = 1, m: lambda = 1/2.
    assert f["options"][0]["estimate"] == pytest.approx(15.0)
    assert m["options"][0]["estimate"] == pytest.approx(5.0)
    assert doc["test"] is None or 0 <= doc["test"]["p_value"] <= 1
    by_option = breakdown(BREAKDOWN_DOC, data, "used", "sex", verify=False)
    assert by_option["groups"][0]["options"][0]["estimate"] == pytest.approx((1 - 0.25) / 0.5)


def test_a_plain_integer_cannot_be_a_group_and_the_error_says_what_can():
    data = _rows((1, "10", 0, 30), (0, "01", 1, 50))
    with pytest.raises(AnalysisError, match="binary or categorical"):
        breakdown(BREAKDOWN_DOC, data, "drinks", "age", verify=False)


def test_a_plain_integer_is_a_numeric_covariate_and_a_multi_option_an_outcome():
    data = _rows(*[(i % 2, "10" if i % 3 else "01", i % 2, 20 + i) for i in range(60)])
    fit = regress(BREAKDOWN_DOC, data, "used[a] ~ age", verify=False)
    assert [c["term"] for c in fit["coefficients"]] == ["Intercept", "age"]
    with pytest.raises(AnalysisError, match="is a number .*breakdown"):
        regress(BREAKDOWN_DOC, data, "drinks ~ age", verify=False)


def test_keep_as_a_fraction_gives_exact_probabilities():
    drinks = Survey.from_dict(BREAKDOWN_DOC).questions["drinks"]
    assert drinks.randomizer.one_probability(4) == F(1, 4) + F(1, 2) * F(4, 10)


def test_a_crosstab_with_a_multi_question_estimates_who_selects_each_option_in_each_cell():
    data = _rows((1, "10", 0, 30), (1, "11", 0, 40), (0, "00", 1, 50), (1, "01", 1, 60))
    doc = crosstab(BREAKDOWN_DOC, data, "used", "sex", verify=False)
    cells = {(c["first"], c["second"]): c["estimate"] for c in doc["cells"]}
    # keep 3/4: each report's term is (bit - 1/4) / (1/2) where sex matches, else 0; mean of 4.
    unbias = lambda bit: (bit - 0.25) / 0.5  # noqa: E731
    assert cells["a", "f"] == pytest.approx((unbias(1) + unbias(1)) / 4)
    assert cells["b", "m"] == pytest.approx((unbias(0) + unbias(1)) / 4)
    with pytest.raises(AnalysisError, match="integer question"):
        crosstab(BREAKDOWN_DOC, data, "drinks", "sex", verify=False)
