"""Results with skip logic: each question's own n, kept exactly by the store, and the analyses
that say how many reports they left out.

A plain question `smokes` gates a plain `brand` and a randomized `quit`: a report of a
non-smoker holds neither. The tallies count the reports that asked each gated question (an
extra slot, stats/asked.py), on SQLite and PostgreSQL; verify, repair and purge count it the
same way; the results JSON, CSV and summary say "n of N"; offline re-analysis of the exported
reports gives the same numbers; breakdowns, cross-tabs and regressions use the reports holding
every question they need and say how many they left out (`n_skipped`).
"""

from __future__ import annotations

import copy
import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema_rs
import pytest
import requests

from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.stats import analyze, breakdown, crosstab, regress
from deniable.aggregator.stats.analyze import StoredAnswers, tally
from deniable.aggregator.stats.results import CSV_COLUMNS
from deniable.aggregator.store import Store, recount
from deniable.aggregator.surveys import create_survey
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.aggregator.test_openapi import schema_of

GATE = "smokes == 'yes'"
DOC: dict[str, Any] = {
    "id": "gate",
    "title": "Smoking",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "mechanism": "none"},
        {
            "id": "region",
            "text": "Where do you live?",
            "type": "categorical",
            "options": ["north", "south"],
            "mechanism": "none",
        },
        {
            "id": "brand",
            "text": "Which brand?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "mechanism": "none",
            "relevant": GATE,
        },
        {
            "id": "quit",
            "text": "Have you tried to quit?",
            "type": "binary",
            "epsilon": 1.0,
            "relevant": GATE,
        },
        {"id": "drinks", "text": "Do you drink?", "type": "binary", "epsilon": 1.0},
    ],
}
N = 60
SMOKERS = [i for i in range(N) if i % 3 == 0]  # 20 of 60
BRANDS = "AABC"  # among smokers, by their order: A twice as often as B or C


def truth_of(i: int) -> dict[str, Any]:
    """Respondent i's true answers to the questions asked: only smokers get brand and quit."""
    truth: dict[str, Any] = {
        "smokes": "yes" if i in SMOKERS else "no",
        "region": "north" if i % 2 else "south",
        "drinks": "yes" if i % 5 else "no",
    }
    if i in SMOKERS:
        truth["brand"] = BRANDS[SMOKERS.index(i) % 4]
        truth["quit"] = "yes" if i % 2 else "no"
    return truth


def signed_reports(survey: Survey) -> list[dict[str, Any]]:
    return [make_report(survey, truth_of(i), generate_key()) for i in range(N)]


@pytest.fixture
def gated(store: Store) -> tuple[Survey, list[dict[str, Any]]]:
    """The survey created in the store, holding N reports; and those reports."""
    record, _ = create_survey(store, copy.deepcopy(DOC), who=OPERATOR)
    survey = Survey.from_dict(record.resolved)
    reports = signed_reports(survey)
    assert all(o.result == "accepted" for o in ingest(store, reports))
    return survey, reports


def exported(store: Store) -> list[str]:
    return list(store.iter_report_bodies("gate"))


def test_tallies_count_the_reports_that_asked_each_gated_question(store, gated) -> None:
    n, support = store.tallies("gate")
    assert n == N
    # A gated question: its k support counts, then the reports that asked it.
    assert len(support["brand"]) == 3 + 1 and support["brand"][3] == len(SMOKERS)
    assert len(support["quit"]) == 2 + 1 and support["quit"][2] == len(SMOKERS)
    assert sum(support["quit"][:2]) == len(SMOKERS)  # each asked report supports one option
    # Plain answers are counted as given: the brands of the smokers, exactly.
    assert support["brand"][:3] == [10, 5, 5]
    # Ungated questions keep their k counts, out of every report.
    assert len(support["smokes"]) == 2 and support["smokes"] == [N - len(SMOKERS), len(SMOKERS)]
    assert len(support["drinks"]) == 2 and sum(support["drinks"]) == N


def test_each_question_results_carry_their_own_n(store, gated) -> None:
    survey, _ = gated
    res = analyze(survey, exported(store))
    entries = res.questions
    assert res.n == N
    assert entries["brand"].n == len(SMOKERS) and entries["brand"].relevant == GATE
    assert entries["quit"].n == len(SMOKERS) and entries["quit"]["relevant"] == GATE
    for qid in ("smokes", "region", "drinks"):
        assert entries[qid].n == N and "relevant" not in entries[qid]
    # Estimated among the smokers (the sub-population asked), not among everyone.
    assert entries["brand"].estimates == {"A": 0.5, "B": 0.25, "C": 0.25}
    assert entries["smokes"].estimates["yes"] == pytest.approx(1 / 3)


def test_the_service_and_offline_reanalysis_agree(store, gated) -> None:
    from deniable.aggregator.stats.estimate import results_document

    survey, reports = gated
    n, support = store.tallies("gate")
    served = results_document(survey, n, support)
    assert analyze(survey, exported(store)).to_dict() == served.to_dict()
    # Offline from the signed reports, and from bare answers (another study's data).
    assert analyze(survey, reports).to_dict() == served.to_dict()
    bare = [{"answers": r["answers"]} for r in reports]
    assert analyze(survey, bare, verify=False).to_dict() == served.to_dict()
    assert tally(survey, reports) == (n, support)


def test_verify_repair_and_purge_count_the_asked_slot(store, gated) -> None:
    before = store.tallies("gate")
    found = recount.verify(store, "gate", tally)
    assert found.consistent and found.counted["quit"][2] == len(SMOKERS)
    # A wrong "asked" count is found and repaired like any other tally.
    with store._write() as conn:  # type: ignore[attr-defined]
        store._run(  # type: ignore[attr-defined]
            conn,
            "UPDATE tallies SET support = support + 7 "
            "WHERE survey_id = ? AND question_id = ? AND option_index = ?",
            ("gate", "quit", 2),
        )
    broken = recount.verify(store, "gate", tally)
    assert not broken.consistent
    assert recount.differences(broken) == [f"quit[2]: stored {len(SMOKERS) + 7}, recounted 20"]
    recount.verify(store, "gate", tally, repair=True)
    assert store.tallies("gate") == before
    # Purging every body keeps the counts, the asked slot included: verify still agrees.
    later = datetime.now(UTC) + timedelta(days=3)
    assert recount.purge(store, 1, tally, now=later) == {"gate": N}
    assert recount.verify(store, "gate", tally).consistent
    assert store.tallies("gate") == before


def test_the_csv_and_the_summary_say_n_of_n(store, gated) -> None:
    survey, _ = gated
    res = analyze(survey, exported(store))
    rows = list(csv.reader(io.StringIO(res.to_csv())))
    assert rows[0] == [*CSV_COLUMNS, "n", "relevant"]
    by_question: dict[str, set[tuple[str, str]]] = {}
    for row in rows[1:]:
        by_question.setdefault(row[0], set()).add((row[-2], row[-1]))
    assert by_question["brand"] == by_question["quit"] == {("20", GATE)}
    assert by_question["drinks"] == {("60", "")}
    assert "20 of 60 reports asked it" in res.summary()
    assert "asked if smokes == 'yes'" in res.summary()
    # One question's CSV alone carries its n too.
    assert res.questions["quit"].to_csv().splitlines()[0].endswith(",n,relevant")


@pytest.mark.parametrize("source", ["store", "reports"])
def test_analyses_use_the_reports_holding_their_questions(store, gated, source) -> None:
    survey, reports = gated
    data = StoredAnswers(store, "gate") if source == "store" else reports
    left_out = N - len(SMOKERS)
    by_region = breakdown(survey, data, "quit", "region")
    assert by_region.n == len(SMOKERS) and by_region["n_skipped"] == left_out
    assert sum(group["n"] for group in by_region["groups"]) == len(SMOKERS)
    by_brand = breakdown(survey, data, "drinks", "brand")  # grouped by a gated question
    assert [g["n"] for g in by_brand["groups"]] == [10, 5, 5] and by_brand.n_skipped == left_out
    joint = crosstab(survey, data, "quit", "drinks")
    assert joint.n == len(SMOKERS) and joint.n_skipped == left_out
    fit = regress(survey, data, "quit ~ region")
    assert fit.n == len(SMOKERS) and fit["n_skipped"] == left_out
    for doc in (by_region, joint, fit):
        assert f"({left_out} more left out: they skipped a question)" in doc.summary()
        header, first = list(csv.reader(io.StringIO(doc.to_csv())))[:2]
        assert header[-1] == "n_skipped" and first[-1] == str(left_out)
    # Questions every report holds: the documents are as they always were.
    everyone = breakdown(survey, data, "drinks", "region")
    assert everyone.n == N and "n_skipped" not in everyone and everyone.n_skipped == 0
    assert "n_skipped" not in everyone.to_csv().splitlines()[0]
    assert "n_skipped" not in crosstab(survey, data, "drinks", "smokes")


def test_a_survey_without_conditions_keeps_its_tallies_and_documents(store) -> None:
    doc = copy.deepcopy(DOC)
    doc["id"] = "plain"
    for question in doc["questions"]:
        question.pop("relevant", None)
    record, _ = create_survey(store, doc, who=OPERATOR)
    survey = Survey.from_dict(record.resolved)
    truths = [{**truth_of(0), "region": r} for r in ("north", "south", "north")]
    reports = [make_report(survey, t, generate_key()) for t in truths]
    assert all(o.result == "accepted" for o in ingest(store, reports))
    n, support = store.tallies("plain")
    assert n == 3 and all(len(support[qid]) == q.k for qid, q in survey.questions.items())
    res = analyze(survey, list(store.iter_report_bodies("plain")))
    assert all(q.n == 3 and "relevant" not in q for q in res.questions.values())
    assert res.to_csv().splitlines()[0] == ",".join(CSV_COLUMNS)
    assert "asked it" not in res.summary()


def test_over_http_results_and_analyses_say_their_n(live_server) -> None:
    created = live_server.create_survey(copy.deepcopy(DOC))
    survey = Survey.from_dict(created["survey"])
    for report in signed_reports(survey):
        answer = requests.post(f"{live_server.url}/api/v1/reports", json=report, timeout=10)
        assert answer.status_code == 201, answer.text
    results = live_server.results("gate")
    schema_of("Results").validate(results)
    entries = {q["id"]: q for q in results["questions"]}
    assert results["n"] == N and entries["quit"]["n"] == len(SMOKERS)
    assert entries["quit"]["relevant"] == GATE and "relevant" not in entries["drinks"]
    text = live_server.get("/api/v1/surveys/gate/results.csv").text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {(r["question"], r["n"]) for r in rows if r["question"] == "brand"} == {("brand", "20")}
    found = live_server.get(
        "/api/v1/surveys/gate/breakdown", params={"question": "quit", "by": "region"}
    )
    assert found.status_code == 200, found.text
    schema_of("Breakdown").validate(found.json())
    assert (found.json()["n"], found.json()["n_skipped"]) == (len(SMOKERS), N - len(SMOKERS))
    # The n_skipped field is stated in the document, with its type.
    with pytest.raises(jsonschema_rs.ValidationError):
        schema_of("Breakdown").validate({**found.json(), "n_skipped": -1})
    verified = live_server.cli("verify", "gate")
    assert "every tally matches the recount" in verified.stdout
