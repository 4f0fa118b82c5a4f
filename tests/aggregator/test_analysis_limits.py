"""Analysis and survey limits: each is checked before the work, just under it works, over it is
the named 4xx (HTTP), exit 1 (CLI), the message (dashboard); and at the default limits the
worst requests keep a real server's peak memory under 1 GB."""

from __future__ import annotations

import importlib
import json
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator import create_app, credentials
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.core import cli
from deniable.aggregator.config import ConfigError, from_env
from deniable.aggregator.ingest import ingest
from deniable.aggregator.stats import analyze, crosstab, joint, sketch_estimate
from deniable.aggregator.stats.estimate import results_document
from deniable.aggregator.stats.limits import DEFAULT_LIMITS, LimitError, Limits
from deniable.aggregator.stats.sketch_estimate import (
    DECODERS,
    DecoderCache,
    decoder,
    decoder_cells,
)
from deniable.aggregator.store.sqlite import SQLiteStore
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.statuses import refusal_status
from deniable.shared import Survey, make_report
from deniable.shared.canonical import canonical_json
from deniable.shared.signing import generate_key
from deniable.shared.sketches import HCMS
from tests.aggregator.conftest import TOKEN
from tests.conftest import LiveServer

#: The module (the package's `analyze` is the function of the same name).
analyze_module = importlib.import_module("deniable.aggregator.stats.analyze")
PROBLEM = "application/problem+json"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

#: hcms k=8, m=16: 2 k m = 256 counters; a decoder of D candidates needs D (8 + D) cells (each
#: candidate is read at one column per hash function).
SKETCH = {"k": 8, "m": 16}
COUNTERS = 256
TEXT_DOC: dict[str, Any] = {
    "id": "words",
    "title": "Words",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "word",
            "text": "A word?",
            "type": "text",
            "epsilon": 2.0,
            "hcms": SKETCH,
            "candidates": ["apple", "pear", "plum"],
        },
    ],
}
#: Five candidates (the three own and two asked for) fit exactly; a sixth does not.
DECODER_LIMIT = decoder_cells(HCMS.from_epsilon(k=8, m=16, epsilon=2.0), 5)


def limited_app(tmp_path: Path, **config: Any) -> Flask:
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "data", **config})
    with app.app_context():
        get_store().add_admin_token(credentials.digest(TOKEN), "tests", "2026-01-01T00:00:00Z")
    return app


def text_question(qid: str, candidates: list[str], **sketch: Any) -> dict[str, Any]:
    return {
        "id": qid,
        "text": f"{qid}?",
        "type": "text",
        "epsilon": 2.0,
        "hcms": sketch or SKETCH,
        "candidates": candidates,
    }


def survey_of(questions: list[dict[str, Any]], sid: str = "many") -> dict[str, Any]:
    return {"id": sid, "title": sid, "questions": questions}


def binaries(count: int) -> list[dict[str, Any]]:
    return [
        {"id": f"q{i}", "text": f"Q{i}?", "type": "binary", "epsilon": 1.0} for i in range(count)
    ]


def assert_limit_problem(response: Any, status: int, setting: str) -> str:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == PROBLEM
    detail = response.json["detail"]
    assert setting in detail and "over the limit of" in detail, detail
    return detail


def test_decoder_cells_are_candidates_times_cells_read_plus_candidates():
    sketch = HCMS.from_epsilon(k=8, m=16, epsilon=2.0)
    assert sketch.slots == COUNTERS
    assert decoder_cells(sketch, 5) == 5 * (8 + 5) == DECODER_LIMIT
    built = decoder(sketch, ["a", "b", "c", "d", "e"])
    # Its arrays (weights, offset, columns) are a few floats per cell, not per sketch counter.
    assert built.nbytes <= 16 * DECODER_LIMIT


# ---- text results with ?candidates= --------------------------------------------------------


def test_results_candidates_just_under_the_decoder_limit_work_and_over_it_are_413(tmp_path):
    app = limited_app(tmp_path, MAX_DECODER_CELLS=DECODER_LIMIT)
    client = app.test_client()
    assert client.post("/api/v1/surveys", json=TEXT_DOC, headers=AUTH).status_code == 201
    for path in ("results", "results.csv"):
        ok = client.get(f"/api/v1/surveys/words/{path}?candidates=fig,kiwi", headers=AUTH)
        assert ok.status_code == 200, ok.get_data(as_text=True)
        over = client.get(f"/api/v1/surveys/words/{path}?candidates=fig,kiwi,lime", headers=AUTH)
        detail = assert_limit_problem(over, 413, "DENIABLE_MAX_DECODER_CELLS")
        assert "word: 6 candidates" in detail and f"{DECODER_LIMIT:,}" in detail
    rows = ok.get_data(as_text=True).splitlines()[1:]
    assert {"fig", "kiwi"} <= {row.split(",")[1] for row in rows if row.startswith("word,")}


def test_the_decoder_limit_is_checked_before_any_decoder_is_built():
    survey = Survey.from_dict(TEXT_DOC)
    # An aggregator's limits (from its settings): the refusal names the setting.
    limits = Limits.from_config(
        {"MAX_DECODER_CELLS": DECODER_LIMIT, "DECODER_CACHE_BYTES": 1 << 30}
    )
    DECODERS.clear()
    with pytest.raises(LimitError) as refused:
        results_document(survey, 0, {}, candidates=("fig", "kiwi", "lime"), limits=limits)
    assert refused.value.kind == "too-large" and refusal_status(refused.value) == 413
    assert refused.value.setting == "DENIABLE_MAX_DECODER_CELLS"
    assert len(DECODERS) == 0  # nothing was built
    doc = results_document(survey, 0, {}, candidates=("fig", "kiwi"), limits=limits)
    assert len(doc["questions"][1]["options"]) == 5 and len(DECODERS) == 1


def test_python_callers_get_the_default_limits():
    # rappor k=64, h=64, m=1024: a candidate is read at up to 64 Bloom bits in each of 1,024
    # cohorts. 100 own and 30 asked-for candidates need 130 x (65,536 + 130) = 8.5 million
    # cells, over the default 8 million: refused before a decoder is built, naming the
    # parameter that raises it (offline there is no aggregator setting to change).
    rappor = {"k": 64, "h": 64, "m": 1024, "f": "1/4", "p": "1/4", "q": "3/4"}
    doc = survey_of(
        [
            {
                "id": "w",
                "text": "w?",
                "type": "text",
                "mechanism": "rappor",
                "rappor": rappor,
                "candidates": [f"own {i}" for i in range(100)],
            }
        ],
        "big",
    )
    survey = Survey.from_dict(doc)
    with pytest.raises(LimitError) as over:
        analyze(survey, [], candidates=[f"w{i}" for i in range(30)], verify=False)
    assert over.value.setting == "limits.max_decoder_cells"
    assert "130 candidates" in str(over.value)
    assert "pass limits=Limits(max_decoder_cells=8536580)" in str(over.value)
    assert "DENIABLE_" not in str(over.value)


def test_the_cli_refuses_candidates_over_the_limit_in_one_line(tmp_path):
    app = limited_app(tmp_path, MAX_DECODER_CELLS=DECODER_LIMIT)
    path = tmp_path / "words.json"
    path.write_text(json.dumps(TEXT_DOC))
    runner = app.test_cli_runner()
    assert runner.invoke(cli, ["create-survey", str(path)]).exit_code == 0
    ok = runner.invoke(cli, ["results", "words", "--candidates", "fig,kiwi"])
    assert ok.exit_code == 0 and "kiwi" in ok.output
    over = runner.invoke(cli, ["results", "words", "--candidates", "fig,kiwi,lime", "--json"])
    assert over.exit_code == 1
    assert "DENIABLE_MAX_DECODER_CELLS" in over.output and "Traceback" not in over.output
    assert len(over.output.strip().splitlines()) == 1


def dashboard(app: Flask) -> FlaskClient:
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    assert client.post("/login", data={"token": TOKEN, "csrf_token": csrf}).status_code == 302
    return client


def new_survey_form(client: FlaskClient, doc: dict[str, Any]) -> Any:
    page = client.get("/surveys/new").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    return client.post("/surveys/new", data={"document": json.dumps(doc), "csrf_token": csrf})


def test_the_dashboard_shows_the_decoder_limit(tmp_path):
    app = limited_app(tmp_path, MAX_DECODER_CELLS=DECODER_LIMIT)
    client = dashboard(app)
    assert new_survey_form(client, TEXT_DOC).status_code == 302
    ok = client.get("/surveys/words?candidates=fig,kiwi").get_data(as_text=True)
    assert "kiwi" in ok and "DENIABLE_MAX_DECODER_CELLS" not in ok
    over = client.get("/surveys/words?candidates=fig,kiwi,lime")
    assert over.status_code == 200  # the page, with its usual message instead of the rows
    assert "DENIABLE_MAX_DECODER_CELLS" in over.get_data(as_text=True)
    csv = client.get("/surveys/words/results.csv?candidates=fig,kiwi,lime")
    assert_limit_problem(csv, 413, "DENIABLE_MAX_DECODER_CELLS")
    assert client.get("/surveys/words/results.csv?candidates=fig,kiwi").status_code == 200


def test_a_limit_lowered_after_creation_is_a_413_not_a_server_error(tmp_path):
    client = limited_app(tmp_path).test_client()
    assert client.post("/api/v1/surveys", json=TEXT_DOC, headers=AUTH).status_code == 201
    lowered = create_app(  # the same data directory, its token already stored
        {"TESTING": True, "DATA_DIR": tmp_path / "data", "MAX_DECODER_CELLS": DECODER_LIMIT - 40}
    )
    api = lowered.test_client().get("/api/v1/surveys/words/results", headers=AUTH)
    assert_limit_problem(api, 413, "DENIABLE_MAX_DECODER_CELLS")
    page = dashboard(lowered).get("/surveys/words")
    assert_limit_problem(page, 413, "DENIABLE_MAX_DECODER_CELLS")


def test_the_decoder_cache_is_bounded_in_bytes_least_recently_used_dropped():
    sketch = HCMS.from_epsilon(k=8, m=16, epsilon=2.0)
    one = decoder(sketch, ("a", "b")).nbytes
    assert one >= (2 * 2 + 2 + 8 * 2) * 8  # its weights, offset and columns
    cache = DecoderCache()
    first = cache.get(sketch, ("a", "b"), 2 * one)
    cache.get(sketch, ("c", "d"), 2 * one)
    assert len(cache) == 2 and cache.nbytes == 2 * one
    assert cache.get(sketch, ("a", "b"), 2 * one) is first  # kept, now the most recent
    cache.get(sketch, ("e", "f"), 2 * one)  # drops ("c", "d"), the least recently used
    assert len(cache) == 2 and cache.nbytes <= 2 * one
    assert cache.get(sketch, ("a", "b"), 2 * one) is first
    # Larger than the whole budget: built for its request, never kept.
    small = DecoderCache()
    built = small.get(sketch, ("a", "b"), one - 1)
    assert built.weights.shape == (2, 2) and len(small) == 0 and small.nbytes == 0
    # A lower budget (another app's setting) drops what no longer fits.
    cache.get(sketch, ("g", "h"), one)
    assert cache.nbytes <= one


# ---- surveys -------------------------------------------------------------------------------


def test_questions_per_survey_just_under_the_limit_work_and_over_it_are_422(tmp_path):
    app = limited_app(tmp_path, MAX_QUESTIONS=3)
    client = app.test_client()
    ok = client.post("/api/v1/surveys", json=survey_of(binaries(3), "three"), headers=AUTH)
    assert ok.status_code == 201, ok.get_data(as_text=True)
    over = client.post("/api/v1/surveys", json=survey_of(binaries(4), "four"), headers=AUTH)
    detail = assert_limit_problem(over, 422, "DENIABLE_MAX_QUESTIONS")
    assert "4 questions" in detail
    assert client.get("/api/v1/surveys/four").status_code == 404  # nothing stored


def test_sketch_cells_per_survey_just_under_the_limit_work_and_over_it_are_422(tmp_path):
    app = limited_app(tmp_path, MAX_SURVEY_SKETCH_CELLS=2 * COUNTERS)
    client = app.test_client()
    two = [text_question("a", ["x"]), text_question("b", ["y"])]
    ok = client.post("/api/v1/surveys", json=survey_of(two, "two"), headers=AUTH)
    assert ok.status_code == 201, ok.get_data(as_text=True)
    bigger = [text_question("a", ["x"]), text_question("b", ["y"], k=8, m=32)]
    over = client.post("/api/v1/surveys", json=survey_of(bigger, "bigger"), headers=AUTH)
    detail = assert_limit_problem(over, 422, "DENIABLE_MAX_SURVEY_SKETCH_CELLS")
    assert f"{COUNTERS + 2 * COUNTERS:,} sketch counters" in detail


def test_survey_bytes_just_under_the_limit_work_and_over_it_are_422(tmp_path):
    from deniable.shared.canonical import canonical_json
    from deniable.shared.survey import Survey

    doc = survey_of(binaries(3), "three")
    size = len(canonical_json(Survey.from_dict(doc).to_dict()))
    at = limited_app(tmp_path / "at", MAX_SURVEY_BYTES=size).test_client()
    assert at.post("/api/v1/surveys", json=doc, headers=AUTH).status_code == 201
    under = limited_app(tmp_path / "under", MAX_SURVEY_BYTES=size - 1).test_client()
    detail = assert_limit_problem(
        under.post("/api/v1/surveys", json=doc, headers=AUTH), 422, "DENIABLE_MAX_SURVEY_BYTES"
    )
    assert f"{size:,} bytes as stored" in detail
    assert under.get("/api/v1/surveys/three", headers=AUTH).status_code == 404  # nothing stored


def test_survey_bytes_are_checked_with_the_other_survey_limits() -> None:
    # `survey import --dry-run` checks with check_survey_limits alone: it said "would be created"
    # of a survey --create then refused; and create_survey built candidates' decoders first.
    from deniable.aggregator.surveys import check_survey_limits
    from deniable.shared.errors import SurveyError

    survey = Survey.from_dict(survey_of(binaries(3), "three"))
    size = len(canonical_json(survey.to_dict()))
    check_survey_limits(survey, Limits(max_survey_bytes=size))
    with pytest.raises(SurveyError, match=f"{size:,} bytes as stored"):
        check_survey_limits(survey, Limits(max_survey_bytes=size - 1))


def test_own_candidates_over_the_decoder_limit_are_refused_at_creation(tmp_path):
    app = limited_app(tmp_path, MAX_DECODER_CELLS=DECODER_LIMIT)
    client = app.test_client()
    five = survey_of([text_question("w", ["a", "b", "c", "d", "e"])], "five")
    assert client.post("/api/v1/surveys", json=five, headers=AUTH).status_code == 201
    six = survey_of([text_question("w", ["a", "b", "c", "d", "e", "f"])], "six")
    detail = assert_limit_problem(
        client.post("/api/v1/surveys", json=six, headers=AUTH), 422, "DENIABLE_MAX_DECODER_CELLS"
    )
    assert "questions[0].candidates" in detail


def test_survey_limits_on_the_cli_and_the_dashboard(tmp_path):
    app = limited_app(tmp_path, MAX_QUESTIONS=3, MAX_SURVEY_SKETCH_CELLS=COUNTERS)
    runner = app.test_cli_runner()
    for i, (doc, setting) in enumerate(
        [
            (survey_of(binaries(4), "four"), "DENIABLE_MAX_QUESTIONS"),
            (
                survey_of([text_question("a", ["x"]), text_question("b", ["y"])], "two"),
                "DENIABLE_MAX_SURVEY_SKETCH_CELLS",
            ),
        ]
    ):
        path = tmp_path / f"doc{i}.json"
        path.write_text(json.dumps(doc))
        result = runner.invoke(cli, ["create-survey", str(path)])
        assert result.exit_code == 1 and setting in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
        page = new_survey_form(dashboard(app), doc)
        assert page.status_code == 400 and setting in page.get_data(as_text=True)
    path = tmp_path / "three.json"
    path.write_text(json.dumps(survey_of(binaries(3), "three")))
    assert runner.invoke(cli, ["create-survey", str(path)]).exit_code == 0


def test_default_survey_limits_refuse_what_would_exhaust_the_aggregator(tmp_path, store):
    # The largest sketch (2 k m = 131,072 counters) fits; the ingestion of three would not.
    big = {"k": 16, "m": 4096}
    record, created = create_survey(
        store, survey_of([text_question("a", ["x"], **big)], "one"), who=OPERATOR
    )
    assert created
    three = survey_of([text_question(q, ["x"], **big) for q in "abc"], "three")
    with pytest.raises(ValueError, match="DENIABLE_MAX_SURVEY_SKETCH_CELLS"):
        create_survey(store, three, who=OPERATOR)
    # Three text questions of a thousand candidates on hcms k=1024 need decoders of 3 x 1,000 x
    # (1,024 + 1,000) = 6.1 million cells; four, 8.1 million, are over the limit.
    many = survey_of(
        [{"id": f"w{q}", "text": "w?", "type": "text", "epsilon": 2.0,
          "hcms": {"k": 1024, "m": 2}, "candidates": [f"word {i}" for i in range(1000)]}
         for q in range(4)],
        "many",
    )  # fmt: skip
    with pytest.raises(ValueError, match="DENIABLE_MAX_DECODER_CELLS"):
        create_survey(store, many, who=OPERATOR)
    assert store.get_survey("three") is None and store.get_survey("many") is None


def test_limit_settings_are_read_and_checked():
    assert from_env({"DENIABLE_MAX_DECODER_CELLS": "1000"})["MAX_DECODER_CELLS"] == 1000
    assert from_env({"DENIABLE_DECODER_CACHE_BYTES": "0"})["DECODER_CACHE_BYTES"] == 0
    limits = Limits.from_config({"MAX_QUESTIONS": 5, "MAX_SURVEY_SKETCH_CELLS": None})
    assert limits.max_questions == 5
    assert limits.max_survey_sketch_cells == DEFAULT_LIMITS.max_survey_sketch_cells
    # The survey format allows 100 questions: the setting can lower that, not raise it.
    with pytest.raises(ConfigError, match="DENIABLE_MAX_QUESTIONS"):
        from_env({"DENIABLE_MAX_QUESTIONS": "101"})
    with pytest.raises(ConfigError, match="DENIABLE_MAX_DECODER_CELLS"):
        from_env({"DENIABLE_MAX_DECODER_CELLS": "0"})


# ---- cross-tabs and breakdowns: chunked, with the same floats -------------------------------

OPTIONS = [f"o{i}" for i in range(6)]
WIDE_DOC: dict[str, Any] = {
    "id": "wide",
    "title": "Wide",
    "questions": [
        {"id": "a", "text": "A?", "type": "multi", "options": OPTIONS, "epsilon": 1.0},
        {"id": "b", "text": "B?", "type": "multi", "options": OPTIONS, "epsilon": 1.0},
        {
            "id": "g",
            "text": "G?",
            "type": "categorical",
            "options": ["x", "y"],
            "mechanism": "none",
        },
    ],
}


def wide_reports(survey: Survey, count: int) -> list[dict[str, Any]]:
    rng = random.Random(4)
    return [
        make_report(
            survey,
            {
                "a": rng.sample(OPTIONS, rng.randint(0, 3)),
                "b": rng.sample(OPTIONS, rng.randint(0, 3)),
                "g": rng.choice(["x", "y"]),
            },
            generate_key(),
        )
        for _ in range(count)
    ]


def test_crosstab_and_breakdown_fold_chunks_into_the_very_same_floats(store, monkeypatch):
    record, _ = create_survey(store, WIDE_DOC, who=OPERATOR)
    survey = Survey.from_dict(record.resolved)
    reports = wide_reports(survey, 600)
    assert {o.result for o in ingest(store, reports)} == {"accepted"}
    stored = analyze_module.StoredAnswers(store, "wide")
    distinct = len(store.answer_counts("wide", ["a", "b"]))
    assert distinct > 100  # many distinct pairs of noisy answers
    one_pass = [
        crosstab(survey, stored, "a", "b"),
        joint.breakdown(survey, stored, "a", "g"),
        crosstab(survey, reports, "a", "b"),
    ]
    monkeypatch.setattr(joint, "CROSSTAB_CHUNK_CELLS", 36 * 7)  # 7 pairs per chunk
    monkeypatch.setattr(joint, "ROWS_AT_ONCE", 7)
    chunked = [
        crosstab(survey, stored, "a", "b"),
        joint.breakdown(survey, stored, "a", "g"),
        crosstab(survey, reports, "a", "b"),
    ]
    assert chunked == one_pass  # the same floats, bit for bit
    # Reports counted a batch at a time (a pair may be counted in two batches): same sums,
    # up to the order of the floating-point additions.
    monkeypatch.setattr(analyze_module, "REPORTS_AT_ONCE", 50)
    batched = crosstab(survey, reports, "a", "b")
    assert batched["n"] == 600
    for cell, expected in zip(batched["cells"], one_pass[0]["cells"], strict=True):
        assert cell["estimate"] == pytest.approx(expected["estimate"], rel=1e-12, abs=1e-12)
        assert cell["stderr"] == pytest.approx(expected["stderr"], rel=1e-12, abs=1e-12)


def test_chunk_size_keeps_crosstab_arrays_small():
    assert joint.CROSSTAB_CHUNK_CELLS * 8 <= 16 * 1024 * 1024
    rows = max(1, joint.CROSSTAB_CHUNK_CELLS // (256 * 256))
    assert rows * 256 * 256 * 8 <= 16 * 1024 * 1024
    assert np.zeros((rows, 256, 256)).nbytes <= 16 * 1024 * 1024


# ---- the worst requests within the default limits, on a real server --------------------------

#: The server process's peak resident memory (VmHWM) must stay under this.
PEAK_BOUND_BYTES = 1024 * 1024 * 1024
#: DENIABLE_MAX_DECODER_CELLS bounds the decoders of one request, summed over the survey's text
#: questions. The largest incidence a decoder holds is RAPPOR's with the most Bloom bits per
#: candidate: k=64, h=64, m=1,024 reads a candidate at 65,536 bits, and 71 own + 50 asked-for
#: candidates need 121 x (65,536 + 121) = 7,944,497 cells, just under the default 8,000,000.
EXTRA = [f"asked {i}" for i in range(50)]


def worst_text_doc() -> dict[str, Any]:
    def words(prefix: str, count: int) -> list[str]:
        return [f"{prefix} {i}" for i in range(count)]

    return survey_of(
        [
            {
                "id": "r",
                "text": "r?",
                "type": "text",
                "mechanism": "rappor",
                "rappor": {"k": 64, "h": 64, "m": 1024, "f": "1/4", "p": "1/4", "q": "3/4"},
                "candidates": words("r", 71),
            },
        ],
        "worst-text",
    )


#: Two multi questions of 64 options: 4,096 cells, and about as many distinct noisy answers
#: as reports (before the fix, 60,000 of them took about 4 GB).
MULTI_OPTIONS = [f"option {i}" for i in range(64)]
MULTI_REPORTS = 60_000


def peak_rss(pid: int) -> int:
    """The process's peak resident set size in bytes (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")


def test_worst_requests_within_the_default_limits_stay_under_1_gb(tmp_path):
    data = tmp_path / "data"
    store = SQLiteStore.in_data_dir(data)
    store.migrate()
    text_doc = worst_text_doc()
    create_survey(store, text_doc, who=OPERATOR)  # the default limits accept it
    wide_doc = survey_of(
        [
            {"id": "a", "text": "A?", "type": "multi", "options": MULTI_OPTIONS, "epsilon": 1.0},
            {"id": "b", "text": "B?", "type": "multi", "options": MULTI_OPTIONS, "epsilon": 1.0},
            {
                "id": "g",
                "text": "G?",
                "type": "categorical",
                "options": ["x", "y"],
                "mechanism": "none",
            },
        ],
        "worst-multi",
    )
    record, _ = create_survey(store, wide_doc, who=OPERATOR)
    wide = Survey.from_dict(record.resolved)
    truth = {"a": MULTI_OPTIONS[:3], "b": [], "g": "x"}
    for _ in range(MULTI_REPORTS // 1000):
        batch = [make_report(wide, truth, generate_key()) for _ in range(1000)]
        assert {o.result for o in ingest(store, batch)} == {"accepted"}
    distinct = sum(1 for _ in store.iter_answer_counts("worst-multi", ["a", "b"]))
    store.close()
    assert distinct > 0.99 * MULTI_REPORTS

    server = LiveServer(data)
    server.start()
    try:
        assert server.process is not None
        at_start = peak_rss(server.process.pid)
        text = server.get(
            "/api/v1/surveys/worst-text/results", params={"candidates": ",".join(EXTRA)}
        )
        assert text.status_code == 200, text.text
        assert [len(q["options"]) for q in text.json()["questions"]] == [121]
        after_text = peak_rss(server.process.pid)
        cross = server.get("/api/v1/surveys/worst-multi/crosstab?first=a&second=b")
        assert cross.status_code == 200, cross.text
        assert cross.json()["n"] == MULTI_REPORTS and len(cross.json()["cells"]) == 64 * 64
        broken = server.get("/api/v1/surveys/worst-multi/breakdown?question=a&by=g")
        assert broken.status_code == 200, broken.text
        peak = peak_rss(server.process.pid)
    finally:
        server.stop()
    print(
        f"server peak RSS: {at_start / 2**20:.0f} MiB at start, {after_text / 2**20:.0f} MiB "
        f"after the text results, {peak / 2**20:.0f} MiB after the cross-tab and breakdown"
    )
    assert peak < PEAK_BOUND_BYTES, f"peak {peak / 2**20:.0f} MiB"


#: The largest regression the default limits let through: two 99-option covariates and a
#: number make 198 columns, and 100,000 reports nearly as many covariate patterns, just under
#: DENIABLE_MAX_MODEL_CELLS (20,000,000). Run in a child process that reports its own peak
#: (VmHWM).
LARGEST_REGRESSION = """
import random
from deniable.aggregator import regress
from deniable.aggregator.stats.limits import DEFAULT_LIMITS
from deniable.shared import Survey

K = 99
options = [f"o{i}" for i in range(K)]
survey = Survey.from_dict({"id": "wide", "title": "Wide", "questions": [
    {"id": "y", "text": "Y?", "type": "binary", "epsilon": 1.0},
    {"id": "c1", "text": "C1?", "type": "categorical", "options": options, "mechanism": "none"},
    {"id": "c2", "text": "C2?", "type": "categorical", "options": options, "mechanism": "none"},
    {"id": "age", "text": "Age?", "type": "integer", "min": 0, "max": 1000, "mechanism": "none"},
]})
rng = random.Random(1)
rows = [{"answers": {"y": rng.randrange(2), "c1": rng.randrange(K), "c2": rng.randrange(K),
                     "age": rng.randrange(1001)}} for _ in range(100_000)]
doc = regress(survey, rows, "y ~ C(c1) + C(c2) + age", verify=False)
patterns = len({(r["answers"]["c1"], r["answers"]["c2"], r["answers"]["age"]) for r in rows})
cells = patterns * len(doc["coefficients"])
assert DEFAULT_LIMITS.max_model_cells * 0.95 < cells <= DEFAULT_LIMITS.max_model_cells, cells
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so it would report the test
# process's own size when that is larger.
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(len(doc["coefficients"]), cells, peak * 1024)
"""


def test_the_largest_regression_within_the_default_limits_stays_under_1_gb():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", LARGEST_REGRESSION],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    columns, cells, peak = (int(v) for v in done.stdout.split())
    print(f"regression of {columns} columns, {cells:,} cells: peak RSS {peak / 2**20:.0f} MiB")
    assert columns == 198
    assert peak < PEAK_BOUND_BYTES, f"peak {peak / 2**20:.0f} MiB"


def test_the_decoder_limit_counts_every_text_question_of_a_request(tmp_path):
    """Each question under the limit is not enough: one request decodes every text question,
    so their decoders together must fit (a survey of many large candidate lists once cost
    minutes of CPU on every results request)."""
    app = limited_app(tmp_path, MAX_DECODER_CELLS=DECODER_LIMIT)
    words = [f"w{i}" for i in range(3)]  # 3 of the 5 candidates one question may decode
    one = survey_of([text_question("a", words)], "one-list")
    two = survey_of([text_question("a", words), text_question("b", words)], "two-lists")
    client = app.test_client()
    assert client.post("/api/v1/surveys", json=one, headers=AUTH).status_code == 201
    refused = client.post("/api/v1/surveys", json=two, headers=AUTH)
    detail = assert_limit_problem(refused, 422, "DENIABLE_MAX_DECODER_CELLS")
    assert "summed over its text questions" in detail
    asked = client.get("/api/v1/surveys/one-list/results?candidates=x1,x2", headers=AUTH)
    assert asked.status_code == 200, asked.get_data(as_text=True)
    over = client.get("/api/v1/surveys/one-list/results?candidates=x1,x2,x3", headers=AUTH)
    assert_limit_problem(over, 413, "DENIABLE_MAX_DECODER_CELLS")
    with pytest.raises(LimitError, match="summed over its text questions"):
        results_document(
            Survey.from_dict(two),
            0,
            {"a": [0] * COUNTERS, "b": [0] * COUNTERS},
            limits=Limits(max_decoder_cells=DECODER_LIMIT),
        )


def test_concurrent_requests_build_a_decoder_once(monkeypatch):
    """Decoders are built one at a time in a process, and a request waiting for the same one
    finds it built: concurrent requests cannot multiply a build's memory or its time."""
    import threading
    import time

    sketch = HCMS.from_epsilon(k=8, m=16, epsilon=2.0)
    cache = DecoderCache()
    built = []
    real = sketch_estimate.decoder

    def counting(*args: Any, **kwargs: Any) -> Any:
        built.append(args[1])
        time.sleep(0.05)  # a slow build: without the lock, every thread would build its own
        return real(*args, **kwargs)

    monkeypatch.setattr(sketch_estimate, "decoder", counting)
    found: list[Any] = []
    threads = [
        threading.Thread(target=lambda: found.append(cache.get(sketch, ("a", "b"), 1 << 30)))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert built == [("a", "b")]
    assert len(found) == 8 and all(f is found[0] for f in found)
