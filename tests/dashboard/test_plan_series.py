"""`deniable-aggregator plan --series` and the dashboard's series planner (docs/researchers.md,
"Planning a survey"): respondents per wave of a series for a margin on a wave's share and on a
change between waves at (epsilon_perm, epsilon_1), through stats/series_planning.py, in words
or as JSON."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from click.testing import CliRunner

from deniable.aggregator.cli import cli
from deniable.shared.longitudinal import LGRR

Z95 = 1.959963984540054


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["plan", "--series", *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_binary_series_by_hand() -> None:
    # L-GRR at (2, 1): p* - q* = 0.731058578630 - 0.268941421370 (the chained channel is RR at
    # epsilon_1 for k = 2); worst lambda (1 - lambda) = 1/4, so one wave needs
    # ceil(z^2 / (4 m^2 (p* - q*)^2)) = 1799 at m = 0.05, and a change twice the variance:
    # ceil(2 z^2 / (4 m^2 (p* - q*)^2)) = 3598.
    chain = LGRR(2, 2.0, 1.0, binary=True)
    gap = float(chain.p_star - chain.q_star)
    share = math.ceil(Z95**2 / (4 * 0.05**2 * gap**2))
    change = math.ceil(2 * Z95**2 / (4 * 0.05**2 * gap**2))
    assert (share, change) == (1799, 3598)
    code, out, _ = run(
        "--epsilon-perm", "2", "--epsilon-1", "1", "--margin", "0.05", "--change-margin", "0.05"
    )
    assert code == 0
    assert "+/- 0.05 on a wave's share: 1,799 respondents per wave" in out
    assert "+/- 0.05 on the change between two waves: 3,598 respondents per wave" in out
    assert "epsilon_perm 2" in out and "epsilon_1 1" in out
    assert out.strip().endswith("Respondents per wave: 3598")


def test_json_holds_the_plan() -> None:
    code, out, _ = run(
        "--epsilon-perm", "3", "--epsilon-1", "1", "--options", "4", "--mechanism", "l-osue",
        "--change-margin", "0.05", "--json",
    )  # fmt: skip
    assert code == 0
    plan = json.loads(out)
    assert plan["mechanism"] == "l-osue" and plan["options"] == 4
    assert plan["respondents_share"] is None and plan["respondents_change"] > 0
    assert plan["respondents"] == plan["respondents_change"]
    assert plan["epsilon_single"] <= 1.0 and plan["epsilon_perm"] == 3.0


def test_a_change_needs_more_respondents_than_a_share_and_a_trend_needs_waves() -> None:
    code, out, _ = run(
        "--epsilon-perm", "2", "--epsilon-1", "1", "--options", "3", "--margin", "0.05",
        "--change-margin", "0.05", "--trend-margin", "0.02", "--waves", "5", "--json",
    )  # fmt: skip
    plan = json.loads(out)
    assert code == 0
    assert plan["respondents_change"] >= 2 * plan["respondents_share"] - 1
    assert plan["respondents_trend"] > 0 and plan["waves"] == 5
    code, _, err = run("--epsilon-perm", "2", "--epsilon-1", "1", "--trend-margin", "0.02")
    assert code == 1 and "a trend margin needs the number of waves" in err


def test_bad_input_is_one_line_saying_what_to_do() -> None:
    code, _, err = run("--epsilon-perm", "1", "--epsilon-1", "2", "--margin", "0.05")
    assert code == 1 and err.count("\n") == 1 and "must be below epsilon_perm" in err
    code, _, err = run("--epsilon-perm", "2", "--margin", "0.05")
    assert code == 2 and "--epsilon-perm and --epsilon-1" in err
    code, _, err = run("--epsilon-perm", "2", "--epsilon-1", "1")
    assert code == 2 and "--margin" in err
    code, _, err = run(
        "--epsilon-perm", "2", "--epsilon-1", "1", "--margin", "0.05", "--epsilon", "1"
    )
    assert code == 2 and "not --epsilon" in err
    code, _, err = run(
        "--epsilon-perm", "2", "--epsilon-1", "1", "--margin", "0.05", "--mechanism", "rr"
    )
    assert code == 2 and "l-grr, l-osue or auto" in err
    result = CliRunner().invoke(cli, ["plan", "--epsilon", "1", "--margin", "0.05", "--waves", "3"])
    assert result.exit_code == 2 and "--waves goes with --series" in result.stderr


def test_the_dashboard_planner_gives_the_same_numbers(researcher: Any) -> None:
    query = (
        "series_epsilon_perm=2&series_epsilon_1=1&series_options=2&series_margin=0.05"
        "&series_change_margin=0.05&series_mechanism=l-grr"
    )
    html = researcher.get(f"/surveys/new?{query}").get_data(as_text=True)
    assert '<strong id="series-n">3,598</strong> respondents per wave' in html
    assert '<span id="series-share">1,799</span>' in html
    assert '<span id="series-change">3,598</span>' in html
    _, out, _ = run(
        "--epsilon-perm", "2", "--epsilon-1", "1", "--margin", "0.05", "--change-margin", "0.05"
    )
    assert out.strip().endswith("3598")


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("series_epsilon_perm=1&series_epsilon_1=2", "must be below epsilon_perm"),
        ("series_epsilon_perm=x&series_epsilon_1=1", "epsilon-perm: expected a number like 2"),
        (
            "series_epsilon_perm=2&series_epsilon_1=1&series_margin=&series_change_margin=",
            "give a margin on a wave",
        ),
        ("series_epsilon_perm=2&series_epsilon_1=1&series_margin=1_0", "margin: expected a number"),
        ("series_epsilon_perm=2&series_epsilon_1=1&series_mechanism=rr", "l-grr, l-osue or auto"),
        ("series_epsilon_perm=2&series_epsilon_1=1&series_margin=1e-320", "would need more than"),
        (
            "series_epsilon_perm=2&series_epsilon_1=1&series_margin=&series_change_margin=1e-200",
            "would need more than",
        ),
    ],
)
def test_the_dashboard_planner_says_what_is_wrong(researcher: Any, query: str, said: str) -> None:
    response = researcher.get(f"/surveys/new?{query}")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert said in html and 'id="series-n"' not in html


@pytest.mark.parametrize(
    "args",
    [
        ("--series", "--epsilon-perm", "2", "--epsilon-1", "1", "--margin", "1e-320"),
        ("--series", "--epsilon-perm", "2", "--epsilon-1", "1", "--margin", "1e-9"),
        ("--series", "--epsilon-perm", "2", "--epsilon-1", "1", "--change-margin", "1e-320"),
        (
            "--series",
            "--epsilon-perm",
            "2",
            "--epsilon-1",
            "1",
            "--margin",
            "0.05",
            "--trend-margin",
            "1e-320",
            "--waves",
            "3",
        ),
        ("--epsilon", "1", "--margin", "1e-320"),
        ("--epsilon", "1", "--margin", "1e-9"),
        ("--epsilon", "1", "--mechanism", "rappor", "--margin", "1e-320"),
        ("--epsilon", "1", "--mechanism", "hcms", "--margin", "1e-320"),
    ],
)
def test_every_planner_refuses_an_answer_that_would_overflow(args: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, ["plan", *args])
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1 and "would need more than" in result.stderr
    assert "unexpected" not in result.stderr
