"""`deniable-aggregator simulate` against a real server: n rises by exactly N, truth is covered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.own_server  # each test makes the same survey and counts its reports

AGGREGATOR = Path(sys.executable).parent / "deniable-aggregator"

DOC: dict[str, Any] = {
    "id": "sim",
    "title": "Simulated",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "cannabis",
            "text": "Cannabis?",
            "type": "binary",
            "mechanism": "coins",
            "coins": {"truth": 0.5, "yes": 0.5},
        },
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C", "D"],
            "epsilon": 2.0,
        },
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["n", "s", "e", "w", "c"],
            "mechanism": "oue",
            "epsilon": 2.0,
        },
    ],
}
TRUTH = {"smokes": {"yes": 0.2}, "party": {"A": 0.1, "B": 0.5, "C": 0.3}, "region": {"e": 0.6}}
#: Two-sided level of about 5.3 standard errors (a miss has odds near 1e-7 per normal interval;
#: Wilson's at small shares miss a little more, about 3e-6 for the unseeded run's 11 intervals):
#: a miss is a bug, not bad luck.
WIDE = "0.9999999"


def simulate(server: Any, *args: str, token: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    env.pop("DENIABLE_TOKEN", None)
    if token:
        env["DENIABLE_TOKEN"] = server.token
    return subprocess.run(
        [str(AGGREGATOR), "simulate", *args, "--url", server.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def rows(stdout: str) -> list[list[str]]:
    """The comparison table's option rows (question, option, truth, estimate, [low, high], holds)."""
    out = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 7 and parts[4].startswith("["):
            out.append(parts)
    return out


@pytest.mark.slow
def test_simulate_raises_n_by_exactly_n_and_covers_truth(live_server: Any) -> None:
    live_server.create_survey(DOC)
    first = simulate(
        live_server, "sim", "--respondents", "150", "--seed", "1", "--confidence", WIDE
    )
    assert "server results: n went from 0 to 150" in first.stdout
    assert all(r[6] == "yes" for r in rows(first.stdout))
    before = live_server.results("sim")["n"]
    assert before == 150
    done = simulate(
        live_server,
        "sim",
        "--respondents",
        "1200",
        "--truth",
        json.dumps(TRUTH),
        "--batch",
        "250",
        "--confidence",
        WIDE,
        "--seed",
        "2",
    )
    assert done.returncode == 0, done.stderr
    assert live_server.results("sim")["n"] == before + 1200
    assert "1200 of 1200 reports accepted" in done.stdout
    # The server's totals mix in the first run's 150 reports (another truth), so the
    # comparison is made on this run's reports alone.
    assert "estimated from this run's accepted reports" in done.stdout
    assert "server n went from 150 to 1350" in done.stdout
    table = rows(done.stdout)
    assert len(table) == 2 + 2 + 4 + 5
    expected = {
        ("smokes", "yes"): 0.2,
        ("party", "B"): 0.5,
        ("region", "e"): 0.6,
        ("region", "n"): 0.1,
    }
    for question, option, truth, _, low, high, holds in table:
        if (question, option) in expected:
            assert float(truth) == pytest.approx(expected[question, option])
        assert float(low.strip("[,")) <= float(truth) <= float(high.strip("]")), (question, option)
        assert holds == "yes"


@pytest.mark.slow
def test_simulate_without_token_computes_locally(live_server: Any) -> None:
    live_server.create_survey(DOC)
    done = simulate(live_server, "sim", "-n", "300", "--confidence", WIDE, token=False)
    assert done.returncode == 0, done.stderr
    assert "estimated from this run's accepted reports (give --token" in done.stdout
    assert all(r[6] == "yes" for r in rows(done.stdout))
    assert live_server.results("sim")["n"] == 300


def test_simulate_invite_only_survey_enrolls(live_server: Any) -> None:
    live_server.create_survey({**DOC, "id": "inv", "enrollment": "invite"})
    done = simulate(live_server, "inv", "-n", "20")
    assert done.returncode == 0, done.stderr
    assert live_server.results("inv")["n"] == 20


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nosuch", "-n", "5"), "no survey 'nosuch'"),
        (("sim", "-n", "5", "--truth", '{"smokes": {"maybe": 1}}'), "no option 'maybe'"),
        (("sim", "-n", "5", "--truth", '{"smokes": {"yes": 2}}'), "probability"),
        (("sim", "-n", "5", "--truth", "/no/such/file.json"), "--truth"),
        (("sim", "-n", "5", "--truth", '{"party": {"A": 0.7, "B": 0.6}}'), "more than 1"),
    ],
)
def test_simulate_bad_input_is_one_line(
    live_server: Any, args: tuple[str, ...], message: str
) -> None:
    live_server.create_survey(DOC)
    done = simulate(live_server, *args)
    assert done.returncode == 1
    assert done.stderr.startswith("error: ") and message in done.stderr
    assert "Traceback" not in done.stderr
    assert live_server.results("sim")["n"] == 0
