"""A regression formula is data: our grammar refuses every Python escape before formulaic sees
it, formulaic evaluates factors without builtins, and the model's size is bounded first.

A canary watches every test: a module whose import writes a file, on the path of this process
and of the real servers. No payload may import it, write the file, or run a shell (the
payloads' shell commands write the same file)."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable.aggregator import AnalysisError, regress
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.core import cli
from deniable.aggregator.ingest import ingest
from deniable.aggregator.stats import formula as grammar
from deniable.aggregator.stats.limits import LimitError, Limits
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import TOKEN
from tests.conftest import AGGREGATOR
from tests.dashboard.conftest import csrf_of

CANARY = "formula_canary"

DOC: dict[str, Any] = {
    "id": "canary",
    "title": "Formulas as data",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south", "east"],
            "mechanism": "none",
        },
        {"id": "adult", "text": "Over 40?", "type": "binary", "mechanism": "none"},
        {
            "id": "age",
            "text": "Age?",
            "type": "integer",
            "min": 18,
            "max": 99,
            "mechanism": "none",
        },
    ],
}
SURVEY = Survey.from_dict(DOC)


@dataclasses.dataclass(frozen=True)
class Canary:
    root: Path
    fired: Path

    def assert_silent(self) -> None:
        assert not self.fired.exists(), f"a formula ran code: {self.fired.read_text()!r}"
        assert CANARY not in sys.modules, "a formula imported the canary module"


@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Canary]:
    """A module that writes `fired` when imported, on sys.path (and the servers' PYTHONPATH)."""
    root = tmp_path_factory.mktemp("canary")
    fired = root / "fired"
    (root / f"{CANARY}.py").write_text(f"open({str(fired)!r}, 'w').write('imported')\n")
    sys.path.insert(0, str(root))
    watched = Canary(root, fired)
    yield watched
    sys.path.remove(str(root))
    watched.assert_silent()


def payloads(canary: Canary) -> list[tuple[str, str]]:
    """(formula, the piece its refusal must name): known escapes from a Python expression."""
    fired = str(canary.fired)
    imp = f"__import__('{CANARY}')"
    return [
        (
            "smokes ~ {C.__globals__['__builtins__']['__import__']('os').system('id > "
            + fired
            + "')}",
            "{C.__globals",
        ),
        (f"smokes ~ {{C.__globals__['__builtins__']['__import__']('{CANARY}')}}", "{C.__globals"),
        (f"smokes ~ {imp}", "__import__"),
        (f"smokes ~ region + {imp}", "__import__"),
        ("smokes ~ ().__class__.__bases__[0].__subclasses__()", ".__class__"),
        (f"smokes ~ {{open('{fired}','w')}}", "{open("),
        (f"smokes ~ I({imp})", "__import__"),
        ("smokes ~ C(region).__class__", ".__class__"),
        ("smokes ~ C(`region`).__init__.__globals__", ".__init__"),
        ("smokes ~ np.exp(age)", ".exp(age)"),
        ("smokes ~ log(age)", "log("),
        ("smokes ~ bs(age)", "bs("),
        (f'smokes ~ exec("import {CANARY}")', "exec("),
        (f'smokes ~ eval("{imp}")', "eval("),
        ("smokes ~ getattr(C, '__globals__')", "getattr("),
        (f"smokes ~ lambda: {imp}", "lambda"),
        (f'smokes ~ f"{{{imp}}}"', '"{__import__'),
        (f"smokes ~ (x := {imp})", "="),
        (f"smokes ~ [{imp} for x in region]", "[__import__"),
        (f"smokes ~ C(region, contrasts={imp})", ", contrasts"),
        ("smokes ~ I(age) + __builtins__", "__builtins__"),
        ("smokes ~ region[0]", "[0]"),
        ("smokes ~ age @ age", "@"),
        ("smokes ~ age % 2", "%"),
        ("smokes ~ age < 40", "<"),
        (f"smokes ~ region\n+ {{{imp}}}", "{__import__"),
        (f"smokes ~ \uff45\uff58\uff45\uff43('import {CANARY}')", "U+FF45"),  # fullwidth exec
        ("smokes ~ region ~ adult", "~ adult"),
        (f"smokes ~ {CANARY}", "no question"),  # an id is data: looked up, never imported
    ]


def reports(n: int = 240) -> list[dict[str, Any]]:
    """Signed reports covering every region x adult x age (20 or 30) pattern."""
    rng = np.random.default_rng(3)
    return [
        make_report(
            SURVEY,
            {
                "smokes": int(rng.random() < 0.3 + 0.1 * (i % 3)),
                "region": i % 3,
                "adult": (i // 3) % 2,
                "age": 20 + 10 * ((i // 6) % 2),
            },
            generate_key(),
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return reports()


# -- the grammar ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "formula, terms",
    [
        ("party[B] ~ region", ["Intercept", "region[T.south]", "region[T.east]"]),
        ("smokes ~ C(region)", ["Intercept", "C(region)[T.south]", "C(region)[T.east]"]),
        ("smokes ~ I((age / 10) ** 2)", ["Intercept", "I((age / 10) ** 2)"]),
        ("smokes ~ adult*region", None),
        ("smokes ~ adult:region", None),
        (
            "smokes ~ `region` + C(`adult`)",
            ["Intercept", "region[T.south]", "region[T.east]", "C(`adult`)[T.1.0]"],
        ),
        ("smokes ~ region - 1", ["region[north]", "region[south]", "region[east]"]),
        ("smokes ~ 0 + adult + I(-age ** 2 + 1e3)", ["adult", "I(-age ** 2 + 1000.0)"]),
    ],
)
def test_accepted_forms_keep_formulaics_terms(formula, terms):
    """What the grammar accepts formulaic builds as before: the same columns, by name."""
    from formulaic import Formula

    parsed = grammar.parse(formula.replace("party[B]", "smokes"))
    frame = pd_frame()
    ours = list(grammar.model_matrix(parsed, frame).columns)
    theirs = list(Formula(parsed.rhs, _ordering="none").get_model_matrix(frame).columns)
    assert ours == theirs
    if terms is not None:
        assert ours == terms


def pd_frame() -> Any:
    import pandas as pd

    return pd.DataFrame(
        {
            "region": pd.Categorical(
                ["north", "south", "east"] * 2, categories=["north", "south", "east"]
            ),
            "adult": np.array([0.0, 1.0] * 3),
            "age": np.array([20.0, 30.0, 40.0, 50.0, 60.0, 70.0]),
        }
    )


def test_the_model_columns_are_counted_as_formulaic_builds_them():
    """The count the limits use equals the width of the matrix formulaic builds."""
    frame = pd_frame()
    for formula in [
        "y ~ region",
        "y ~ region * adult",
        "y ~ (region + adult + age) ** 3",
        "y ~ region:adult - 1",
        "y ~ C(adult):region + I(age / 10):C(region)",
        "y ~ region / C(adult)",
        "y ~ 0 + region:C(adult)",
    ]:
        parsed = grammar.parse(formula)

        def levels(factor: grammar.Factor) -> int | None:
            qid = factor.lone if factor.kind == "I" else factor.ids[0]
            if qid == "region":
                return 3
            return 2 if factor.kind == "C" else None

        width = grammar.model_matrix(parsed, frame).shape[1]
        assert grammar.model_columns(parsed, levels, 10**6) == width, formula


@pytest.mark.parametrize(
    "formula, piece",
    [
        ("y ~ " + "a + " * 600 + "a", "2,000"),
        ("y ~ " + "(" * 21 + "a" + ")" * 21, "nested deeper than 20"),
        ("y ~ (a + b) ** 9", "power of terms"),
        ("y ~ a + 2", "'2'"),
        ("y ~ (a + b + c + d + e + f + g + h + i + j + k + l + m + n + o + p) ** 4", "products"),
        ("y ~ -1", "nothing to fit"),
        ("y ~ `a b`", "`a b`"),
        ("y ~ a__b", "a__b"),
        ("y ~ Age", "'Age'"),
        ("y ~ C(I(a))", "C(...) takes one question id"),
        ("y ~ I(" + " + ".join(["a"] * 30) + ")", "nested deeper than 20"),
    ],
)
def test_the_grammar_bounds_and_names_what_it_refuses(formula, piece):
    with pytest.raises(AnalysisError) as refused:
        grammar.parse(formula)
    assert piece in str(refused.value)


def test_a_long_formula_within_the_limit_is_read_without_deep_recursion():
    assert len(grammar.parse("y ~ " + ":".join(["a"] * 995)).terms) == 1
    many = grammar.parse("y ~ " + " + ".join(f"q{i}" for i in range(300)))
    assert len(many.terms) == 300 and len(many.text) <= grammar.MAX_LENGTH


# -- Python ----------------------------------------------------------------------------------

#: Arithmetic that the grammar accepts but no report can take: an error that says so, never an
#: exception of Python's (a 500) or a model of infinities.
NOT_FINITE = [
    "smokes ~ I(age + 9 ** 9 ** 9)",
    "smokes ~ I(age * 10.0 ** 400)",
    "smokes ~ I(age ** 99999)",
    "smokes ~ I(age / 0)",
    "smokes ~ I(1 / (age - age))",
    "smokes ~ I(age + 0 ** -1)",
    "smokes ~ I(age + (-8) ** 0.5)",
]


@pytest.mark.parametrize("formula", NOT_FINITE)
def test_arithmetic_without_a_finite_value_is_an_analysis_error(rows, formula):
    with pytest.raises(AnalysisError, match="not a finite number"):
        regress(SURVEY, rows, formula, verify=False)


@pytest.mark.parametrize(
    "formula", ["smokes ~ I(1)", "smokes ~ age + I(2 * 3)", "smokes ~ C(adult):I(2)"]
)
def test_an_i_without_a_question_is_refused_naming_it(rows, formula):
    with pytest.raises(AnalysisError, match="names no question") as refused:
        regress(SURVEY, rows, formula, verify=False)
    assert "I(" in str(refused.value)


def test_a_number_too_large_for_a_float_is_an_analysis_error(rows):
    with pytest.raises(AnalysisError, match="too large"):
        regress(SURVEY, rows, "smokes ~ I(age * 1" + "0" * 400 + ")", verify=False)


def test_every_payload_is_refused_in_python_naming_the_piece(canary, rows):
    for formula, piece in payloads(canary):
        with pytest.raises(AnalysisError) as refused:
            regress(SURVEY, rows, formula, verify=False)
        assert piece in str(refused.value), (formula, str(refused.value))
        canary.assert_silent()


def test_formulaic_gets_no_builtins_even_past_the_grammar(canary):
    """Defence in depth: a hostile right-hand side forged past parse() still runs nothing."""
    frame = pd_frame()
    accepted = grammar.parse("smokes ~ region")
    imp = f"__import__('{CANARY}')"
    for rhs in [
        f"{{{imp}}}",
        f"C(region).__class__.__init__.__globals__['__builtins__']['{imp}']",
        f"{{C.__globals__['__builtins__']['__import__']('{CANARY}')}}",
        f"I({imp})",
        "np.exp(age)",
        "exp(age)",
        f"{{open('{canary.fired}', 'w')}}",
        "C(region, contrasts=__import__('os'))",
    ]:
        forged = dataclasses.replace(accepted, rhs=rhs)
        with pytest.raises(Exception):  # noqa: B017 - any refusal, as long as nothing runs
            grammar.model_matrix(forged, frame)
        canary.assert_silent()
    for expr in [imp, "C.__globals__", "I(age).real", "I(lambda: 0)", "C(region, levels=1)"]:
        with pytest.raises(AnalysisError):
            grammar.evaluate(expr, frame)
    canary.assert_silent()


VALID_PIECES = ["region", "adult", "age", "`region`", "C(region)", "C(adult)", "I(age / 10)"]
VALID_PIECES += ["I((age - 40) ** 2)", "I(-age)", "1", "0"]
HOSTILE_PIECES = [".__class__", "[0]", f"__import__('{CANARY}')", "{", "}", "lambda: 0", "'x'"]
HOSTILE_PIECES += ['"x"', "exec(", "eval(", "np.", "@", "%", "<", ",", "=", ":=", "é", "\u212a"]
HOSTILE_PIECES += ["\uff45\uff58\uff45\uff43", "\x00", "`", "~", "#", "\\", "\n", "**", "__"]
HOSTILE_PIECES += ["getattr(C, '__globals__')", "C.__globals__", "__builtins__", "f'{x}'", "_"]
HOSTILE_PIECES += ["for x in region", "open('/tmp/x', 'w')", "1e309", "9" * 30, "(", ")", "2"]

#: Formulas of the grammar: pieces joined by its operators, grouped, raised to a power.
valid_formulas = st.recursive(
    st.sampled_from(VALID_PIECES),
    lambda inner: (
        st.tuples(inner, st.sampled_from([" + ", " - ", " * ", ":", " / "]), inner).map("".join)
        | inner.map(lambda text: f"({text})")
        | inner.map(lambda text: f"({text}) ** 2")
    ),
    max_leaves=6,
)


@st.composite
def mixed_formulas(draw: Any) -> str:
    """A formula of the grammar, with a hostile piece spliced in about two times in three."""
    text = draw(valid_formulas)
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(HOSTILE_PIECES)) + text[at:]
    return text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rhs=mixed_formulas(),
    outcome=st.sampled_from(["smokes", "`smokes`", "smokes ", "region", "{smokes}"]),
)
def test_any_mix_of_pieces_fits_the_grammar_or_is_an_analysis_error(canary, rows, rhs, outcome):
    try:
        doc = regress(SURVEY, rows, f"{outcome} ~ {rhs}", verify=False)
    except AnalysisError:
        pass
    else:
        assert doc["n"] == len(rows)
    canary.assert_silent()


@settings(max_examples=100, deadline=None)
@given(rhs=st.text(max_size=40))
def test_any_text_fits_the_grammar_or_is_an_analysis_error(canary, rhs):
    try:
        grammar.parse(f"smokes ~ {rhs}")
    except AnalysisError as exc:
        assert str(exc).startswith("formula: ")
    canary.assert_silent()


# -- the limits ----------------------------------------------------------------------------


def test_the_column_and_cell_limits_in_python(rows):
    limits = Limits(max_model_columns=6, max_model_cells=40)
    assert regress(SURVEY, rows, "smokes ~ region * adult", verify=False, limits=limits)["n"] == 240
    # Offline the refusals name the parameter (limits=), not an aggregator's setting.
    with pytest.raises(LimitError, match=r"least 7 columns.*limits\.max_model_columns"):
        regress(SURVEY, rows, "smokes ~ region * adult + age", verify=False, limits=limits)
    with pytest.raises(LimitError, match=r"60 cells.*limits\.max_model_cells"):
        regress(SURVEY, rows, "smokes ~ region + adult + age", verify=False, limits=limits)
    # C() of a number has as many levels as values seen: age (20, 30) adds one column.
    regress(SURVEY, rows, "smokes ~ region + C(age)", verify=False, limits=limits)
    with pytest.raises(LimitError, match=r"pass limits=Limits\(max_model_columns="):
        regress(SURVEY, rows, "smokes ~ region * C(age) + adult", verify=False, limits=limits)


def test_a_model_far_over_the_limit_is_refused_before_a_report_is_read():
    def never() -> Iterator[dict[str, Any]]:
        raise AssertionError("the reports were read")
        yield {}

    with pytest.raises(LimitError, match=r"at least \d+ columns, over the limit of 3"):
        regress(SURVEY, never(), "smokes ~ region * C(region)", limits=Limits(max_model_columns=3))


# -- HTTP, on a real server ------------------------------------------------------------------


@pytest.fixture
def server(live_server_factory, canary):
    """A real aggregator with the canary on its path and small model limits."""
    live = live_server_factory(
        {
            "PYTHONPATH": str(canary.root),
            "DENIABLE_MAX_MODEL_COLUMNS": "6",
            "DENIABLE_MAX_MODEL_CELLS": "40",
        }
    )
    live.create_survey(DOC)
    answer = requests.post(f"{live.url}/api/v1/reports", json={"reports": reports()}, timeout=60)
    assert answer.status_code == 200, answer.text
    return live


def regression(live: Any, formula: str) -> requests.Response:
    return requests.post(
        f"{live.url}/api/v1/surveys/canary/regression",
        json={"formula": formula},
        headers=live.headers,
        timeout=60,
    )


def test_over_http_every_payload_is_a_422_naming_the_piece(server, canary):
    for formula, piece in payloads(canary):
        answer = regression(server, formula)
        assert answer.status_code == 422, (formula, answer.text)
        assert answer.headers["Content-Type"].startswith("application/problem+json")
        assert piece in answer.json()["detail"], (formula, answer.json()["detail"])
    canary.assert_silent()
    for formula in NOT_FINITE:
        answer = regression(server, formula)
        assert answer.status_code == 422, (formula, answer.text)
        assert "not a finite number" in answer.json()["detail"]
    assert regression(server, "smokes ~ region + adult").status_code == 200


def test_over_http_the_model_limits_are_422s_naming_their_setting(server):
    assert regression(server, "smokes ~ region * adult").status_code == 200  # 6 columns
    over = regression(server, "smokes ~ region * adult + age")
    assert over.status_code == 422 and "DENIABLE_MAX_MODEL_COLUMNS" in over.json()["detail"]
    assert regression(server, "smokes ~ region + age").status_code == 200  # 6 x 4 = 24 cells
    cells = regression(server, "smokes ~ region + adult + age")  # 12 patterns x 5 columns
    assert cells.status_code == 422 and "DENIABLE_MAX_MODEL_CELLS" in cells.json()["detail"]


# -- the dashboard and the CLI ---------------------------------------------------------------


@pytest.fixture
def stored(app: Flask) -> Flask:
    with app.app_context():
        store = get_store()
        create_survey(store, DOC, who=OPERATOR)
        assert all(o.result == "accepted" for o in ingest(store, reports()))
    return app


@pytest.fixture
def researcher(stored: Flask) -> FlaskClient:
    client = stored.test_client()
    page = client.get("/login").get_data(as_text=True)
    assert (
        client.post("/login", data={"token": TOKEN, "csrf_token": csrf_of(page)}).status_code == 302
    )
    return client


def test_the_dashboard_refuses_every_payload_naming_the_piece(researcher, canary):
    csrf = csrf_of(researcher.get("/surveys/canary/analysis").get_data(as_text=True))
    for formula, piece in payloads(canary):
        answer = researcher.post(
            "/surveys/canary/analysis", data={"formula": formula, "csrf_token": csrf}
        )
        html = answer.get_data(as_text=True)
        alert = re.search(r'class="flash error" role="alert">([^<]*)<', html)
        assert alert, formula
        assert piece.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&#34;").replace(
            "'", "&#39;"
        ) in alert.group(1), (formula, alert.group(1))
        canary.assert_silent()


def test_a_dashboard_get_with_a_formula_runs_nothing(researcher, canary):
    payload = f"smokes ~ {{__import__('{CANARY}')}}"
    html = researcher.get("/surveys/canary/analysis", query_string={"formula": payload}).get_data(
        as_text=True
    )
    assert 'role="alert"' not in html and 'id="regression-result"' not in html
    html = researcher.get(
        "/surveys/canary/analysis", query_string={"formula": "smokes ~ region"}
    ).get_data(as_text=True)
    assert 'id="regression-result"' not in html  # even a valid formula waits for the POST
    canary.assert_silent()


def test_the_cli_refuses_every_payload_in_one_line(stored, canary):
    env = {"DENIABLE_DATA_DIR": str(stored.config["DATA_DIR"])}
    for formula, piece in payloads(canary):
        result = CliRunner().invoke(cli, ["regress", "canary", formula], env=env)
        assert result.exit_code == 1, (formula, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: formula"), result.stderr
        assert piece in lines[0] and "Traceback" not in result.output
        canary.assert_silent()
    over = CliRunner().invoke(
        cli,
        ["regress", "canary", "smokes ~ region * adult + age"],
        env={**env, "DENIABLE_MAX_MODEL_COLUMNS": "6"},
    )
    assert over.exit_code == 1 and "DENIABLE_MAX_MODEL_COLUMNS" in over.stderr


def test_the_installed_cli_prints_one_line_and_exits_1(stored, canary):
    env = {"DENIABLE_DATA_DIR": str(stored.config["DATA_DIR"]), "PYTHONPATH": str(canary.root)}
    formula = payloads(canary)[0][0]
    result = subprocess.run(
        [str(AGGREGATOR), "regress", "canary", formula],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: formula: ")
    assert "{C.__globals" in result.stderr
    canary.assert_silent()


def test_the_canary_fires_on_bare_formulaic(tmp_path):
    """The check is live: the issue's payload, handed to formulaic as before, imports a canary
    (in a child process, with a canary of its own, so this process stays clean)."""
    fired = tmp_path / "fired"
    (tmp_path / "other_canary.py").write_text(f"open({str(fired)!r}, 'w').write('imported')\n")
    payload = "{C.__globals__['__builtins__']['__import__']('other_canary')}"
    script = (
        "import pandas as pd; from formulaic import Formula; "
        f"Formula({payload!r}).get_model_matrix(pd.DataFrame({{'a': [1.0, 2.0]}}))"
    )
    subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        timeout=120,
    )
    assert fired.read_text() == "imported"
