"""Split ballot over real HTTP on SQLite and PostgreSQL (docs/statistics.md, "Split ballot"):
Python clients draw their arms, the results split the reports between the arms, and a report
whose arms or direct answers are wrong is refused (422) naming them, with nothing stored."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests

from deniable.client import Client
from deniable.shared import Survey, make_report, sign_report
from deniable.shared.report import hour_now, new_report_id
from deniable.shared.signing import generate_key

SPLIT_DOC: dict[str, Any] = {
    "id": "split",
    "title": "Split ballot",
    "questions": [
        {"id": "region", "text": "Region?", "type": "categorical", "options": ["N", "S"],
         "mechanism": "none"},
        {"id": "cheated", "text": "Ever cheated?", "type": "binary", "epsilon": 1.0,
         "direct_share": "1/2"},
        {"id": "drinks", "text": "Drinks a week?", "type": "integer", "min": 0, "max": 20,
         "epsilon": 1.0, "direct_share": 0.25},
        {"id": "party", "text": "Party?", "type": "categorical", "options": ["A", "B", "C"],
         "mechanism": "oue", "epsilon": 2.0, "direct_share": 0.5},
    ],
}  # fmt: skip

TRUTH = {"region": "N", "cheated": "yes", "drinks": 4, "party": "B"}


def post(server: Any, report: dict[str, Any]) -> requests.Response:
    return requests.post(f"{server.url}/api/v1/reports", json=report, timeout=30)


def signed(survey: Survey, answers: dict[str, Any], arms: object = None) -> dict[str, Any]:
    """A well-signed report of exactly these answers and arms (None: no arms field)."""
    unsigned: dict[str, Any] = {
        "v": 1,
        "survey": survey.id,
        "survey_hash": survey.hash,
        "answers": answers,
        "report_id": new_report_id(),
        "sent_at": hour_now(),
    }
    if arms is not None:
        unsigned["arms"] = arms
    return sign_report(unsigned, generate_key())


@pytest.fixture
def published(live_server: Any) -> Survey:
    return Survey.from_dict(live_server.create_survey(SPLIT_DOC, fresh=True)["survey"])


def test_the_published_survey_keeps_its_shares(published: Survey) -> None:
    assert published.split == ("cheated", "drinks", "party")
    assert published.to_dict()["questions"][1]["direct_share"] == "0.5"
    assert published.epsilon == pytest.approx(4.0)  # the most a respondent can spend


def test_many_clients_split_between_the_arms(
    live_server: Any, published: Survey, tmp_path: Path
) -> None:
    arms: list[dict[str, str]] = []
    for i in range(24):
        with Client(live_server.url, tmp_path / f"device{i}") as client:
            receipt = client.answer(published.id, TRUTH)
            assert receipt.status == "accepted", receipt.reason
            report = client.ledger.get(client._server(), published.id)
            assert report is not None
            arms.append(report.report["arms"])
            # The ledger charges only the randomized arms' epsilons.
            randomized = [q for q, arm in report.report["arms"].items() if arm == "randomized"]
            assert receipt.epsilon == pytest.approx(published.epsilon_of(randomized))
            for qid, arm in report.report["arms"].items():
                if arm == "direct":  # sent exactly as answered
                    expected = {"cheated": 1, "drinks": 4, "party": 1}[qid]
                    assert report.report["answers"][qid] == expected
    assert all(set(a) == {"cheated", "drinks", "party"} for a in arms)
    results = live_server.results(published.id)
    assert results["n"] == 24
    entries = {q["id"]: q for q in results["questions"]}
    assert "direct" not in entries["region"]
    for qid in ("cheated", "drinks", "party"):
        entry = entries[qid]
        direct_n = sum(a[qid] == "direct" for a in arms)
        assert entry["direct"]["n"] == direct_n
        assert entry["n"] + entry["direct"]["n"] == 24
        assert [row["option"] for row in entry["difference"]["options"]] == [
            row["option"] for row in entry["options"]
        ]
    if entries["cheated"]["direct"]["n"]:
        yes = entries["cheated"]["direct"]["options"][1]
        assert yes["estimate"] == 1.0  # every direct answer was yes
    if entries["drinks"]["direct"]["n"]:
        assert entries["drinks"]["direct"]["options"][0]["estimate"] == 4.0
    csv = live_server.get(f"/api/v1/surveys/{published.id}/results.csv")
    assert csv.status_code == 200, csv.text
    header, *rows = csv.text.splitlines()
    assert header.endswith(",randomized_n,direct_n,direct_estimate,direct_stderr,direct_ci_low,"
                           "direct_ci_high,difference,difference_stderr,difference_ci_low,"
                           "difference_ci_high")  # fmt: skip
    assert rows[0].startswith("region,N,") and rows[0].endswith(",,,,,,,,,,")
    recount = live_server.cli("verify", published.id)
    assert "every tally matches the recount" in recount.stdout


#: Well-signed reports with wrong arms or direct answers, and the start of each refusal.
REFUSED: list[tuple[dict[str, Any], object, str]] = [
    (
        {"region": 0, "cheated": 1, "drinks": 1, "party": "010"},
        None,
        "arms: missing; this survey has split-ballot questions",
    ),
    (
        {"region": 0, "cheated": 1, "drinks": 1, "party": "010"},
        {"cheated": "direct", "drinks": "randomized"},
        "arms.party: missing",
    ),
    (
        {"region": 0, "cheated": 1, "drinks": 1, "party": "010"},
        {"cheated": "direct", "drinks": "randomized", "party": "randomized", "region": "direct"},
        "arms.region: not a split-ballot question",
    ),
    (
        {"region": 0, "cheated": 1, "drinks": 1, "party": "010"},
        {"cheated": "plainly", "drinks": "randomized", "party": "randomized"},
        "arms.cheated: expected 'direct' or 'randomized'",
    ),
    (  # a direct answer must be the plain encoding: an index, not oue's bit string
        {"region": 0, "cheated": 1, "drinks": 1, "party": "010"},
        {"cheated": "randomized", "drinks": "randomized", "party": "direct"},
        "answers.party:",
    ),
    (  # a direct integer is the value itself, within min..max
        {"region": 0, "cheated": 1, "drinks": 21, "party": 1},
        {"cheated": "randomized", "drinks": "direct", "party": "direct"},
        "answers.drinks:",
    ),
    (  # a randomized onebit answer is 0 or 1, never the value
        {"region": 0, "cheated": 1, "drinks": 7, "party": "010"},
        {"cheated": "randomized", "drinks": "randomized", "party": "randomized"},
        "answers.drinks:",
    ),
]


def test_wrong_arms_and_direct_answers_are_refused_and_nothing_is_stored(
    live_server: Any, published: Survey
) -> None:
    stored = make_report(published, TRUTH, generate_key())
    assert post(live_server, stored).status_code == 201
    for answers, arms, detail in REFUSED:
        report = signed(published, answers, arms)
        response = post(live_server, report)
        assert response.status_code == 422, response.text
        body = response.json()
        assert body["result"] == "rejected" and body["report_id"] == report["report_id"]
        assert body["detail"].startswith(detail), (detail, body["detail"])
    assert live_server.results(published.id)["n"] == 1  # nothing else stored


def test_the_arms_are_signed(live_server: Any, published: Survey) -> None:
    report = make_report(published, TRUTH, generate_key())
    flipped = {q: "randomized" if a == "direct" else "direct" for q, a in report["arms"].items()}
    altered = {**report, "arms": flipped}
    response = post(live_server, altered)
    assert response.status_code == 422
    assert response.json()["detail"].startswith("answers.") or "signature" in response.text
    assert live_server.results(published.id)["n"] == 0


def test_a_survey_without_split_ballot_refuses_arms(live_server: Any) -> None:
    doc = {**SPLIT_DOC, "id": "nosplit", "questions": SPLIT_DOC["questions"][:2]}
    doc["questions"] = [dict(q) for q in doc["questions"]]
    doc["questions"][1].pop("direct_share")
    survey = Survey.from_dict(live_server.create_survey(doc)["survey"])
    assert "arms" not in make_report(survey, {"region": "S", "cheated": "no"}, generate_key())
    report = signed(survey, {"region": 0, "cheated": 1}, {"cheated": "direct"})
    response = post(live_server, report)
    assert response.status_code == 422
    assert response.json()["detail"].startswith("arms: this survey has no split-ballot question")


def test_a_split_ballot_on_a_text_or_plain_question_is_refused(live_server: Any) -> None:
    for question, reason in (
        ({"id": "t", "text": "Word?", "type": "text", "epsilon": 1.0}, "a text question"),
        ({"id": "t", "text": "Age?", "type": "binary", "mechanism": "none"}, "a plain question"),
    ):
        doc = {
            "id": "badsplit",
            "title": "Bad",
            "questions": [
                {"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0},
                {**question, "direct_share": 0.25},
            ],
        }
        response = requests.post(
            f"{live_server.url}/api/v1/surveys", json=doc, headers=live_server.headers, timeout=10
        )
        assert response.status_code == 422, response.text
        detail = response.json()["detail"]
        assert "questions[1].direct_share" in detail and reason in detail


DENIABLE = Path(sys.executable).parent / "deniable"
NOTICE = "This question is asked directly on this device: sent exactly as you answer."


def respondent(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`deniable ARGS` with its own data directory."""
    env = {**os.environ, "DENIABLE_HOME": str(home)}
    env.pop("DENIABLE_EPSILON_CAP", None)
    return subprocess.run(
        [str(DENIABLE), *args], input=stdin, capture_output=True, text=True, env=env, timeout=60
    )


def test_the_cli_says_the_direct_arm_before_the_question(
    live_server: Any, published: Survey, tmp_path: Path
) -> None:
    seen: set[str] = set()
    for i in range(8):
        home = tmp_path / f"home{i}"
        result = respondent(home, "answer", live_server.url, published.id, stdin="1\ny\n4\n2\ny\n")
        assert result.returncode == 0, result.stderr
        out = result.stdout
        stored = {r["public_key"]: r for r in _stored(live_server, published.id)}
        assert len(stored) == i + 1
        arms = _newest_arms(home, published.id)
        for qid, arm in arms.items():
            block = out[out.index(f"[{qid}]") : out.index("Your answer", out.index(f"[{qid}]"))]
            assert (NOTICE in block) == (arm == "direct"), (qid, arm, block)
            seen.add(arm)
            (line,) = [x for x in out[out.index("Noisy answers sent") :].splitlines()
                       if x.startswith(f"  {qid}: ")]  # fmt: skip
            assert (NOTICE in line) == (arm == "direct"), line
        assert arms.keys() == set(published.split)
    assert seen == {"direct", "randomized"}  # none direct: (3/16)^8 < 2e-6
    explained = respondent(tmp_path / "explain", "explain", live_server.url, published.id)
    assert "cheated: asked directly (sent exactly as you answer" in explained.stdout
    assert "on 50% of devices" in explained.stdout and "on 25% of devices" in explained.stdout


def test_the_cli_with_yes_says_the_direct_arm_before_sending(
    live_server: Any, published: Survey, tmp_path: Path
) -> None:
    flags = [f"--answer={qid}={value}" for qid, value in
             {"region": "S", "cheated": "no", "drinks": "2", "party": "C"}.items()]  # fmt: skip
    home = tmp_path / "yes"
    result = respondent(home, "answer", live_server.url, published.id, *flags, "--yes")
    assert result.returncode == 0, result.stderr
    arms = _newest_arms(home, published.id)
    direct = [qid for qid, arm in arms.items() if arm == "direct"]
    assert (NOTICE in result.stderr) == bool(direct)
    for qid in direct:
        assert qid in result.stderr


def _stored(server: Any, survey_id: str) -> list[dict[str, Any]]:
    response = server.get(f"/api/v1/surveys/{survey_id}/reports.jsonl")
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def _newest_arms(home: Path, survey_id: str) -> dict[str, str]:
    """The arms of the report the respondent's ledger holds for the survey."""
    with sqlite3.connect(next(home.rglob("ledger.sqlite3"))) as ledger:
        (found,) = [json.loads(row[0]) for row in ledger.execute("SELECT report FROM reports")]
    assert found["survey"] == survey_id
    return dict(found["arms"])


def test_the_dashboard_shows_both_estimates_and_the_difference(
    live_server: Any, published: Survey
) -> None:
    arms = [
        {"cheated": "direct", "drinks": "direct", "party": "direct"},
        {"cheated": "randomized", "drinks": "randomized", "party": "randomized"},
    ]
    for arm in arms * 3:
        assert post(live_server, make_report(published, TRUTH, generate_key(), arms=arm)).ok
    session = requests.Session()
    page = session.get(f"{live_server.url}/login", timeout=10).text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    login = session.post(
        f"{live_server.url}/login",
        data={"token": live_server.token, "csrf_token": csrf.group(1)},
        timeout=10,
    )
    assert login.status_code == 200
    html = session.get(f"{live_server.url}/surveys/{published.id}", timeout=30).text
    for qid in published.split:
        assert f'id="split-{qid}"' in html
    block = html[html.index('id="split-cheated"') :]
    block = block[: block.index("</table>")]
    assert "Split ballot: randomized (3 reports) against asked directly" in " ".join(block.split())
    assert "100.0%" in block  # every direct answer was yes
    assert 'id="split-region"' not in html


def test_the_arm_is_a_regression_covariate_and_breakdowns_use_the_randomized_arm(
    live_server: Any, published: Survey
) -> None:
    # 80% admit it under randomized response, a third when asked directly: arm effect on the
    # log-odds log(1/2) - log(4) = -2.08, its standard error about 0.2 with 1,200 reports.
    # The randomized arm's noisy share of yes (0.639) must stay below p* = 0.731, where the
    # fit has no finite maximum: with 300 randomized reports it reached p* about once in
    # 10,000 runs (3.6 sd); with 600 it is 5.1 sd away (9e-8).
    sent = {"direct": 0, "randomized": 0}
    batch = []
    for i in range(1200):
        arm = "direct" if i % 2 else "randomized"
        yes = i % 3 == 0 if arm == "direct" else i % 5 != 0
        arms = {"cheated": arm, "drinks": "randomized", "party": "randomized"}
        truth = {**TRUTH, "region": "NS"[i % 4 // 2], "cheated": "yes" if yes else "no"}
        batch.append(make_report(published, truth, generate_key(), arms=arms))
        sent[arm] += 1
    for start in range(0, len(batch), 100):
        response = requests.post(
            f"{live_server.url}/api/v1/reports",
            json={"reports": batch[start : start + 100]},
            timeout=60,
        )
        results = response.json()["results"]
        assert {r["result"] for r in results} == {"accepted"}, results[:3]
    response = requests.post(
        f"{live_server.url}/api/v1/surveys/{published.id}/regression",
        json={"formula": "cheated ~ region + cheated_arm"},
        headers=live_server.headers,
        timeout=60,
    )
    assert response.status_code == 200, response.text
    fit = response.json()
    assert fit["n"] == 1200 and fit["converged"], fit
    terms = {row["term"]: row for row in fit["coefficients"]}
    assert set(terms) == {"Intercept", "region[T.S]", "cheated_arm"}
    arm = terms["cheated_arm"]
    assert arm["ci_high"] < 0 and abs(arm["estimate"] + 2.08) < 6 * arm["stderr"]
    breakdown = live_server.get(
        f"/api/v1/surveys/{published.id}/breakdown", params={"question": "cheated", "by": "region"}
    )
    assert breakdown.status_code == 200, breakdown.text
    groups = breakdown.json()["groups"]
    assert sum(group["n"] for group in groups) == sent["randomized"]  # direct answers left out
