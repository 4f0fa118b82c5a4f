"""`deniable-aggregator plan` and the planning math, against hand-computed values."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from deniable.aggregator.cli.core import cli
from deniable.aggregator.stats import planning


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["plan", *args])
    return result.exit_code, result.stdout, result.stderr


def test_binary_rr_eps1_margin5_at_95_percent_by_hand() -> None:
    # rr at eps = 1 keeps the truth w.p. e/(1+e) rounded down to 12 decimals = 0.731058578630.
    # p* - q* = 2 * 0.73105857863 - 1 = 0.46211715726; worst lambda(1-lambda) = 1/4.
    # n = ceil(1.959963984540^2 * 0.25 / (0.05^2 * 0.46211715726^2))
    #   = ceil(3.841458820694 * 0.25 / (0.0025 * 0.213552...)) = ceil(1798.84) = 1799.
    z = 1.959963984540054
    gap = 2 * 0.73105857863 - 1
    assert math.ceil(z * z * 0.25 / (0.05**2 * gap * gap)) == 1799
    code, out, _ = run("--epsilon", "1", "--margin", "0.05")
    assert code == 0
    assert out.strip().splitlines()[-1] == "1799"
    assert "rr" in out and "coins" in out


def test_respondents_gives_margin() -> None:
    code, out, _ = run("--epsilon", "1", "--respondents", "1799")
    assert code == 0
    margin = float(out.strip().splitlines()[-1])
    assert 0.0499 < margin <= 0.05


def test_categorical_compares_grr_and_oue() -> None:
    code, out, _ = run("--epsilon", "2", "--margin", "0.03", "--options", "8", "--mechanism", "oue")
    assert code == 0
    lines = out.strip().splitlines()
    assert any(line.strip().startswith("grr") for line in lines)
    oue = planning.mechanism_for("oue", 8, 2.0)
    z = planning.z_for(0.95)
    assert int(lines[-1]) == math.ceil(z * z * oue.worst_variance(1) / 0.03**2)


def test_confidence_raises_n() -> None:
    low = planning.plan(1.0, margin=0.05, confidence=0.9).chosen.respondents
    high = planning.plan(1.0, margin=0.05, confidence=0.99).chosen.respondents
    assert low < 1799 < high


@pytest.mark.parametrize(
    "args",
    [
        ("--epsilon", "50", "--margin", "0.05"),
        ("--epsilon", "1", "--margin", "2"),
        ("--epsilon", "1", "--margin", "0.05", "--confidence", "1.5"),
        ("--epsilon", "1", "--margin", "0.05", "--options", "4", "--mechanism", "rr"),
        ("--epsilon", "1", "--margin", "0.05", "--options", "1"),
        ("--epsilon", "1", "--margin", "0.05", "--options", "257"),
        ("--epsilon", "1", "--margin", "1e-300"),  # margin squared underflows to zero
        ("--epsilon", "1", "--margin", "1e-7"),  # more respondents than any survey has
    ],
)
def test_bad_input_is_one_line_exit_1(args: tuple[str, ...]) -> None:
    code, out, err = run(*args)
    assert code == 1
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in out + err


def test_plans_for_as_many_options_as_a_survey_may_have() -> None:
    code, out, _ = run("--epsilon", "4", "--margin", "0.05", "--options", "256")
    assert code == 0
    oue = planning.mechanism_for("oue", 256, 4.0)
    z = planning.z_for(0.95)
    needed = math.ceil(z * z * oue.worst_variance(1) / 0.05**2)
    grr = planning.mechanism_for("grr", 256, 4.0)
    needed = min(needed, math.ceil(z * z * grr.worst_variance(1) / 0.05**2))
    assert int(out.strip().splitlines()[-1]) == needed


def test_neither_margin_nor_respondents_is_usage_error() -> None:
    code, _, _ = run("--epsilon", "1")
    assert code == 2


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("epsilon", "1_0", "epsilon: expected a number like 1, got '1_0'"),
        ("epsilon", "\uff11", "epsilon: expected a number like 1"),
        ("epsilon", "1e999", "epsilon: expected a number like 1, got '1e999'"),
        ("margin", "abc", "margin: expected a number like 0.05, got 'abc'"),
    ],
)
def test_the_cli_and_the_dashboard_read_the_planners_numbers_alike(
    researcher: object, field: str, value: str, words: str
) -> None:
    """One parse (the planners' service functions in aggregator/surveys.py, over params.py): a number Python's float() would take
    but a person does not type is refused by both, in the same words."""
    numbers = {"epsilon": "1", "margin": "0.05", field: value}
    code, _, err = run("--epsilon", numbers["epsilon"], "--margin", numbers["margin"])
    assert code == 1 and err.startswith(f"error: {words}") and len(err.splitlines()) == 1, err
    page = researcher.get("/surveys/new", query_string=numbers)  # type: ignore[attr-defined]
    html = page.get_data(as_text=True)
    assert 'role="alert"' in html and 'id="plan-n"' not in html
    assert words.replace("'", "&#39;") in html
