"""Limits that leave real surveys alone: a survey of three text questions of 45 candidates each
(cms and hcms k 64, m 1024; rappor k 64, h 2, m 8, benchmarks/text_survey.py's) is created and
analysed at the default limits on the server and offline, with decoders whose memory does not
grow with the sketches; and the offline analyses take `limits=`, their refusals naming that
parameter, while the server's (API, CLI) keep naming the settings."""

from __future__ import annotations

import importlib.util
import json
import random
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from flask import Flask

from deniable.aggregator import analyze, breakdown, create_app, credentials, crosstab, regress
from deniable.aggregator.cli.core import cli
from deniable.aggregator.stats.estimate import check_decoders
from deniable.aggregator.stats.limits import DEFAULT_LIMITS, LimitError, Limits
from deniable.aggregator.stats.sketch_estimate import decoder_cells
from deniable.aggregator.web.db import get_store
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import TOKEN

AUTH = {"Authorization": f"Bearer {TOKEN}"}
BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "text_survey.py"


def benchmark() -> ModuleType:
    """benchmarks/text_survey.py as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("text_survey_benchmark", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def app_at(data: Path, **config: Any) -> Flask:
    """An app on a data directory; the researcher's token stored by the first one."""
    first = not data.exists()
    app = create_app({"TESTING": True, "DATA_DIR": data, **config})
    if first:
        with app.app_context():
            get_store().add_admin_token(credentials.digest(TOKEN), "tests", "2026-01-01T00:00:00Z")
    return app


def text_reports(survey: Survey, count: int, seed: int = 5) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        make_report(
            survey,
            {
                qid: rng.choice([*q.candidates[:5], "not a candidate"])
                for qid, q in survey.questions.items()
            },
            generate_key(),
        )
        for _ in range(count)
    ]


def estimates(doc: Any) -> dict[tuple[str, str], float]:
    return {
        (q["id"], row["option"]): row["estimate"] for q in doc["questions"] for row in q["options"]
    }


def test_the_text_survey_is_created_and_analysed_at_the_default_limits(tmp_path):
    doc = benchmark().design_survey()
    survey = Survey.from_dict(doc)
    sizes = [(q.randomizer, len(q.candidates)) for q in survey.questions.values()]
    assert [count for _, count in sizes] == [45, 45, 45]
    # Decoders the size of candidates x sketch counters needed 8.9 million cells, over the
    # default limit; candidates x (cells read + candidates) need 12,555.
    dense = sum(count * (sketch.slots + count) for sketch, count in sizes)
    assert dense > DEFAULT_LIMITS.max_decoder_cells
    assert sum(decoder_cells(sketch, count) for sketch, count in sizes) == 12_555
    check_decoders(survey, [f"asked {i}" for i in range(50)])  # 50 more fit too

    client = app_at(tmp_path / "data").test_client()
    created = client.post("/api/v1/surveys", json=doc, headers=AUTH)
    assert created.status_code == 201, created.get_data(as_text=True)
    reports = text_reports(survey, 300)
    sent = client.post("/api/v1/reports", json={"reports": reports})
    assert {r["result"] for r in sent.get_json()["results"]} == {"accepted"}
    served = client.get("/api/v1/surveys/text-survey/results", headers=AUTH)
    assert served.status_code == 200, served.get_data(as_text=True)
    assert [len(q["options"]) for q in served.json["questions"]] == [45, 45, 45]
    asked = client.get(
        "/api/v1/surveys/text-survey/results",
        query_string={"candidates": ",".join(f"asked {i}" for i in range(50))},
        headers=AUTH,
    )
    assert asked.status_code == 200, asked.get_data(as_text=True)
    assert [len(q["options"]) for q in asked.json["questions"]] == [95, 95, 95]

    offline = analyze(doc, reports)  # the default limits, offline
    assert offline["n"] == served.json["n"] == 300
    ours, theirs = estimates(offline), estimates(served.json)
    assert ours.keys() == theirs.keys()
    assert all(ours[key] == pytest.approx(theirs[key], abs=1e-12) for key in ours)


def test_the_decoders_of_a_text_survey_cost_little_memory(tmp_path):
    """Offline analysis of the survey in a child process (VmHWM) beside a process that only
    imports the aggregator: dense decoders (candidates x sketch counters) would add over 140
    MB; these add a few."""
    bench = benchmark()
    path = tmp_path / "reports.jsonl"
    bench.write_reports(path, 200, seed=2)
    baseline = bench.in_child("baseline")
    offline = bench.in_child("offline", path)
    assert offline["doc"]["n"] == 200
    grew = offline["peak"] - baseline["peak"]
    print(f"offline analysis: {grew / 2**20:.0f} MiB over the baseline")
    assert grew < 64 * 2**20, f"{grew / 2**20:.0f} MiB"


def test_distinct_text_answers_are_held_by_bytes_not_by_count(tmp_path, monkeypatch):
    """Text answers are nearly all distinct, a kilobyte each: the pattern memo and the pattern
    lists start over by bytes (their default bounds 8 MiB each), and the estimates are the
    same as in one list."""
    analyze_module = importlib.import_module("deniable.aggregator.stats.analyze")

    bench = benchmark()
    survey = Survey.from_dict(bench.design_survey())
    reports = text_reports(survey, 120)
    whole = estimates(analyze(survey, reports))
    sizes = [analyze_module.answers_bytes(dict(r["answers"])) for r in reports]
    assert min(sizes) > 1000  # the cms question's sketch row
    monkeypatch.setattr(analyze_module, "PATTERN_BYTES_AT_ONCE", 10 * max(sizes))
    monkeypatch.setattr(analyze_module, "PATTERN_BYTES_REMEMBERED", 10 * max(sizes))
    lists = list(analyze_module.answer_patterns(survey, reports))
    assert len(lists) >= 120 // 11
    assert all(len(patterns) <= 11 for patterns in lists)
    assert sum(n for patterns in lists for _, n in patterns) == 120
    split = estimates(analyze(survey, reports))
    assert split.keys() == whole.keys()
    for key, value in whole.items():
        assert split[key] == pytest.approx(value, rel=1e-9, abs=1e-12)


# ---- offline limits= and the server's settings ---------------------------------------------

GROUPED: dict[str, Any] = {
    "id": "grouped",
    "title": "Grouped",
    "questions": [
        {"id": "smokes", "text": "Smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "word",
            "text": "A word?",
            "type": "text",
            "epsilon": 2.0,
            "hcms": {"k": 8, "m": 16},
            "candidates": ["apple", "pear", "plum"],
        },
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south"],
            "mechanism": "none",
        },
    ],
}
#: hcms k=8: the three candidates need 3 x (8 + 3) = 33 cells.
OWN_CELLS = 33


def grouped_reports(survey: Survey, count: int = 40) -> list[dict[str, Any]]:
    rng = random.Random(3)
    return [
        make_report(
            survey,
            {
                "smokes": rng.choice(["yes", "no"]),
                "word": rng.choice(["apple", "pear", "kiwi"]),
                "region": rng.choice(["north", "south"]),
            },
            generate_key(),
        )
        for _ in range(count)
    ]


def never_read() -> Iterator[dict[str, Any]]:
    raise AssertionError("the reports were read before the limit was checked")
    yield {}  # pragma: no cover


def assert_names_the_parameter(refused: pytest.ExceptionInfo[LimitError], name: str) -> None:
    message = str(refused.value)
    assert refused.value.setting == f"limits.{name}", message
    assert f"pass limits=Limits({name}=" in message and "DENIABLE_" not in message, message


def test_offline_analyses_take_limits_and_name_the_parameter():
    survey = Survey.from_dict(GROUPED)
    reports = grouped_reports(survey)
    small = Limits(max_decoder_cells=OWN_CELLS - 1)
    with pytest.raises(LimitError) as refused:
        analyze(survey, never_read(), limits=small)
    assert_names_the_parameter(refused, "max_decoder_cells")
    assert f"pass limits=Limits(max_decoder_cells={OWN_CELLS})" in str(refused.value)
    assert analyze(survey, reports, limits=Limits(max_decoder_cells=OWN_CELLS))["n"] == 40
    # ?candidates= offline: four candidates need 4 x 12 = 48 cells.
    with pytest.raises(LimitError) as refused:
        analyze(survey, reports, candidates=["fig"], limits=Limits(max_decoder_cells=47))
    assert_names_the_parameter(refused, "max_decoder_cells")

    with pytest.raises(LimitError) as refused:
        regress(survey, reports, "smokes ~ region", limits=Limits(max_model_columns=1))
    assert_names_the_parameter(refused, "max_model_columns")
    assert regress(survey, reports, "smokes ~ region", limits=Limits(max_model_columns=2))

    # A breakdown and a cross-tab have no limit to meet (their memory is flat in the reports,
    # text questions are not theirs); they take limits= as the others do.
    assert breakdown(survey, reports, "smokes", "region", limits=small) == breakdown(
        survey, reports, "smokes", "region"
    )
    assert crosstab(survey, reports, "smokes", "region", limits=small) == crosstab(
        survey, reports, "smokes", "region"
    )


def test_the_server_names_its_settings(tmp_path):
    data = tmp_path / "data"
    first = app_at(data).test_client()
    assert first.post("/api/v1/surveys", json=GROUPED, headers=AUTH).status_code == 201
    survey = Survey.from_dict(GROUPED)
    sent = first.post("/api/v1/reports", json={"reports": grouped_reports(survey)})
    assert {r["result"] for r in sent.get_json()["results"]} == {"accepted"}
    # The same store under lower settings: the text results and the regression are refused,
    # naming the settings (not the Python parameter).
    lowered = app_at(data, MAX_DECODER_CELLS=OWN_CELLS - 1, MAX_MODEL_COLUMNS=1)
    client = lowered.test_client()
    for refused, setting in (
        (client.get("/api/v1/surveys/grouped/results", headers=AUTH), "DENIABLE_MAX_DECODER_CELLS"),
        (
            client.post(
                "/api/v1/surveys/grouped/regression",
                json={"formula": "smokes ~ region"},
                headers=AUTH,
            ),
            "DENIABLE_MAX_MODEL_COLUMNS",
        ),
    ):
        assert refused.status_code in (413, 422), refused.get_data(as_text=True)
        detail = refused.json["detail"]
        assert setting in detail and "limits=" not in detail, detail


def test_the_cli_offline_names_the_settings(tmp_path):
    """The CLI reads the settings (environment), offline too: its refusals name them."""
    survey = Survey.from_dict(GROUPED)
    reports = tmp_path / "reports.jsonl"
    # 400 reports: at 40 a region's noisy share fell below the flip rate (the fit at its
    # boundary, "separation") about once in 25 runs; at 400 that is over 6 sd away.
    many = grouped_reports(survey, 400)
    reports.write_text("".join(json.dumps(r) + "\n" for r in many))
    document = tmp_path / "grouped.json"
    document.write_text(json.dumps(GROUPED))
    runner = app_at(tmp_path / "data", MAX_MODEL_COLUMNS=1).test_cli_runner()
    args = ["--reports", str(reports), "--survey", str(document)]
    over = runner.invoke(cli, ["regress", "grouped", "smokes ~ region", *args])
    assert over.exit_code == 1, over.output
    assert "DENIABLE_MAX_MODEL_COLUMNS" in over.output and "limits=" not in over.output
    fine = app_at(tmp_path / "data2").test_cli_runner()
    ok = fine.invoke(cli, ["regress", "grouped", "smokes ~ region", *args])
    assert ok.exit_code == 0, ok.output
