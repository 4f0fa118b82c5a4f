"""Text questions at the aggregator: survey validation, ingestion into sketch tallies in both
stores, results rows per candidate (and ad-hoc ones), CSV, and refusals that store nothing."""

from __future__ import annotations

import copy
import csv
import io
import math
import random
from typing import Any

import pytest

from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.store import Store
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.statuses import report_status
from deniable.shared import Survey, SurveyError, build_report, make_report, sign_report
from deniable.shared.signing import generate_key

TEXT_DOC: dict[str, Any] = {
    "id": "cities",
    "title": "Cities",
    "questions": [
        {
            "id": "city",
            "text": "Where were you born?",
            "type": "text",
            "epsilon": 2.0,
            "hcms": {"k": 16, "m": 64},
            "candidates": ["Lagos", "Kano", "Abuja", "Ibadan"],
        },
        {
            "id": "app",
            "text": "Which app do you use most?",
            "type": "text",
            "mechanism": "cms",
            "epsilon": 2.0,
            "cms": {"k": 8, "m": 32},
            "candidates": ["mail", "chat"],
        },
        {
            "id": "drug",
            "text": "Which drug did you last use?",
            "type": "text",
            "mechanism": "rappor",
            "rappor": {"k": 16, "h": 2, "m": 4, "f": "1/4", "p": "1/4", "q": "3/4"},
            "candidates": ["cannabis", "alcohol"],
        },
    ],
}
#: Shares of the true answers in the simulated reports below.
CITIES = {"lagos": 0.5, "kano": 0.3, "abuja": 0.15, "jos": 0.05}


def answers(rng: random.Random) -> dict[str, str]:
    city = rng.choices(list(CITIES), weights=list(CITIES.values()))[0]
    return {"city": city.title(), "app": rng.choice(["mail", "chat"]), "drug": "cannabis"}


def seeded_report(survey: Survey, truth: dict[str, Any], coins: random.Random) -> dict[str, Any]:
    """A signed report of `truth` randomized with bytes from a seeded generator in place of the
    device's secure source (docs/randomness.md): the same noisy answers on every run, so an
    estimate checked against the truth cannot fail by the luck of the coins."""
    noisy = {
        qid: survey.questions[qid].randomize(value, random_bytes=coins.randbytes)
        for qid, value in truth.items()
    }
    return build_report(survey, noisy, generate_key())


@pytest.fixture
def cities(store: Store) -> Survey:
    record, _ = create_survey(store, copy.deepcopy(TEXT_DOC), who=OPERATOR)
    return Survey.from_dict(record.resolved)


def test_the_resolved_form_spells_out_the_sketches_and_normalized_candidates() -> None:
    resolved = Survey.from_dict(TEXT_DOC).to_dict()
    city, app, drug = resolved["questions"]
    assert city["mechanism"] == "hcms" and city["hcms"]["k"] == 16 and "keep" in city["hcms"]
    assert city["candidates"] == ["lagos", "kano", "abuja", "ibadan"] and "options" not in city
    assert app["cms"]["m"] == 32 and drug["rappor"]["f"] == "0.25"
    # f = p = 1/4, q = 3/4: P[1 | Bloom bit] = 1/8 + 9/16 = 11/16, P[1 | other] = 5/16, so
    # epsilon = h ln((11/16)(11/16) / ((5/16)(5/16))) = 2 ln(121/25).
    assert drug["epsilon"] == pytest.approx(2 * math.log(121 / 25), rel=1e-12)
    assert Survey.from_dict(resolved).hash == Survey.from_dict(TEXT_DOC).hash


def _question(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(TEXT_DOC)
    doc["questions"][0].update(changes)
    return doc


@pytest.mark.parametrize(
    ("doc", "field", "words"),
    [
        (_question(hcms={"k": 16, "m": 100}), "questions[0].hcms", "power of two"),
        (_question(hcms={"k": 16, "m": 64, "x": 1}), "questions[0].hcms.x", "unknown"),
        (_question(mechanism="grr"), "questions[0].mechanism", "hcms, cms, rappor"),
        (_question(options=["a", "b"]), "questions[0].options", "candidates, not options"),
        (_question(candidates=["Lagos", " lagos "]), "questions[0].candidates[1]", "again"),
        (_question(candidates=["ok", ""]), "questions[0].candidates[1]", "word or phrase"),
        (_question(candidates="lagos"), "questions[0].candidates", "list"),
        (_question(epsilon=None), "questions[0].epsilon", "missing"),
        (_question(epsilon=30), "questions[0].epsilon", "expected a number in"),
        (_question(q_star="\r 41211\r"), "questions[0].q_star", "probability"),
        (_question(p_star="0.5"), "questions[0].p_star", "does not match"),
        (_question(hcms={"k": 16, "m": 64, "keep": "+37. "}), "questions[0].hcms.keep", ""),
        (_question(hcms={"k": 16.0, "m": 64}), "questions[0].hcms.k", "whole number"),
    ],
)
def test_bad_text_questions_are_refused_naming_the_field(doc: dict, field: str, words: str):
    with pytest.raises(SurveyError) as caught:
        Survey.from_dict(doc)
    assert str(caught.value).startswith(field) and words in str(caught.value), str(caught.value)


def test_rappor_selects_among_more_candidates_than_its_bits_resolve(store: Store) -> None:
    # 16 Bloom bits in all (8 bits x 2 cohorts) cannot resolve 40 candidates: the results
    # first select with a sparse non-negative fit, then fit least squares to the selected.
    from deniable.aggregator.surveys import results

    doc = copy.deepcopy(TEXT_DOC)
    doc["questions"][2]["rappor"] = {"k": 8, "h": 1, "m": 2, "f": "1/4", "p": "1/4", "q": "3/4"}
    words = ["cannabis", "alcohol", *(f"word {i}" for i in range(38))]
    doc["questions"][2]["candidates"] = words
    record, _ = create_survey(store, doc, who=OPERATOR)
    survey = Survey.from_dict(record.resolved)
    # Seeded coins: with the secure ones, alcohol's lead over the best other word (0.23 on
    # average) fell below 0.08 in 20 of 20,000 simulated runs, a tail that reaches a swap of
    # the top two about once in 10^5 runs on each store.
    rng, coins = random.Random(9), random.Random(3)
    truth = {"city": "lagos", "app": "mail"}
    reports = [
        seeded_report(survey, {**truth, "drug": "cannabis" if rng.random() < 0.7 else "alcohol"},
                      coins)
        for _ in range(3000)
    ]  # fmt: skip
    assert {o.result for o in ingest(store, reports)} == {"accepted"}
    rows = results(store, "cities", who=OPERATOR)["questions"][2]["options"]
    assert len(rows) == 40 and {r["option"] for r in rows} == set(words)
    top = {r["option"]: r for r in rows[:2]}
    assert set(top) == {"cannabis", "alcohol"}
    for word, share in (("cannabis", 0.7), ("alcohol", 0.3)):
        assert abs(top[word]["estimate"] - share) <= 5 * top[word]["stderr"], top[word]
    left_out = [r for r in rows if r["stderr"] is None]
    assert left_out and all(r["estimate"] == 0.0 for r in left_out)


def test_reports_fill_the_sketches_and_the_results_rank_the_candidates(
    store: Store, cities: Survey
) -> None:
    from deniable.aggregator.surveys import results

    # Seeded coins: with the secure ones five rows checked at 5 standard errors and kano's
    # lead over abuja (4.7 sd) failed about 3 times in 10^6 runs, on each store.
    rng, coins = random.Random(5), random.Random(3)
    reports = [seeded_report(cities, answers(rng), coins) for _ in range(3000)]
    assert {o.result for o in ingest(store, reports)} == {"accepted"}
    doc = results(store, "cities", who=OPERATOR)
    city = doc["questions"][0]
    assert city["type"] == "text" and city["n"] == 3000
    assert [o["option"] for o in city["options"][:2]] == ["lagos", "kano"]
    for row in city["options"]:
        truth = CITIES.get(row["option"], 0.0)
        assert abs(row["estimate"] - truth) <= 5 * row["stderr"], row
        assert row["support"] is None and row["share"] == min(max(row["estimate"], 0), 1)
    asked = results(store, "cities", candidates=("jos", "lagos"), who=OPERATOR)["questions"][0][
        "options"
    ]
    labels = [o["option"] for o in asked]
    assert "jos" in labels and labels.count("lagos") == 1 and len(labels) == 5
    drug = doc["questions"][2]["options"]
    assert drug[0]["option"] == "cannabis" and abs(drug[0]["estimate"] - 1) <= 5 * drug[0]["stderr"]


@pytest.mark.parametrize(
    ("qid", "value"),
    [
        ("city", [0, 0]),
        ("city", [16, 0, 1]),
        ("city", [0, 64, 1]),
        ("city", [0, 0, 2]),
        ("city", "lagos"),
        ("app", [0, "0" * 31]),
        ("app", [8, "0" * 32]),
        ("drug", [4, "0" * 16]),
        ("drug", [0, "x" * 16]),
        ("drug", [0, "0" * 16, 1, 2]),
        ("drug", [0.0, "0" * 16]),
    ],
)
def test_malformed_sketch_answers_are_refused_and_nothing_is_stored(
    store: Store, cities: Survey, qid: str, value: Any
) -> None:
    key = generate_key()
    report = make_report(cities, answers(random.Random(1)), key)
    report = sign_report({**report, "answers": {**report["answers"], qid: value}}, key)
    before = store.tallies("cities"), list(store.iter_report_bodies("cities"))
    (outcome,) = ingest(store, report)
    assert (outcome.result, report_status(outcome)) == ("rejected", 422), outcome.reason
    assert qid in (outcome.reason or "")
    assert (store.tallies("cities"), list(store.iter_report_bodies("cities"))) == before


def test_the_http_results_take_ad_hoc_candidates_and_say_what_is_wrong(client, auth) -> None:
    assert (
        client.post("/api/v1/surveys", json=copy.deepcopy(TEXT_DOC), headers=auth).status_code
        == 201
    )
    survey = Survey.from_dict(client.get("/api/v1/surveys/cities").json["survey"])
    rng = random.Random(2)
    for _ in range(30):
        report = make_report(survey, answers(rng), generate_key())
        assert client.post("/api/v1/reports", json=report).status_code == 201
    doc = client.get(
        "/api/v1/surveys/cities/results?candidates=Jos,%20PORT%20Harcourt", headers=auth
    ).json
    assert {"jos", "port harcourt"} <= {o["option"] for o in doc["questions"][0]["options"]}
    text = client.get("/api/v1/surveys/cities/results.csv?candidates=jos", headers=auth).get_data(
        as_text=True
    )
    rows = list(csv.DictReader(io.StringIO(text)))
    city_rows = [r for r in rows if r["question"] == "city"]
    assert len(city_rows) == 5 and all(r["support"] == "" for r in city_rows)
    long = ",".join(f"w{i}" for i in range(51))
    bad = client.get(f"/api/v1/surveys/cities/results?candidates={long}", headers=auth)
    assert bad.status_code == 400 and "at most 50" in bad.json["detail"]


def test_designs_own_examples_are_accepted() -> None:
    doc = {
        "id": "design",
        "title": "The docs' examples",
        "questions": [
            {
                "id": "city",
                "text": "City?",
                "type": "text",
                "mechanism": "hcms",
                "epsilon": 4,
                "hcms": {"k": 64, "m": 1024},
                "candidates": ["lagos", "kano"],
            },
            {
                "id": "drug",
                "text": "Drug?",
                "type": "text",
                "mechanism": "rappor",
                "rappor": {"k": 32, "h": 2, "m": 8, "f": "1/2", "p": "1/2", "q": "3/4"},
            },
        ],
    }
    survey = Survey.from_dict(doc)
    assert survey.questions["city"].k == 2 * 64 * 1024
    assert survey.questions["drug"].epsilon == pytest.approx(2 * math.log(77 / 45))
