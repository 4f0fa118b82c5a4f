"""Hostile input: property tests of the report parser and ingestion, and body limits."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable.aggregator import create_app
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.store.sqlite import SQLiteStore
from deniable.aggregator.surveys import create_survey
from deniable.shared import ReportError, Survey, make_report, parse_report
from deniable.shared.report import check_structure
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import SURVEY_DOC, TRUTH

SURVEY = Survey.from_dict(copy.deepcopy(SURVEY_DOC))
VALID = make_report(SURVEY, TRUTH, generate_key())
FIELDS = sorted(VALID)
FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Text as JSON can carry it, lone surrogates (a \ud800 escape) included, often.
texts = st.text(max_size=80) | st.text(st.sampled_from("a\ud800\udfff\U0001f600"), max_size=4)
keys = st.text(max_size=12) | st.text(st.sampled_from("a\ud800"), max_size=2)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | texts
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=20,
)


@st.composite
def mutated_reports(draw: st.DrawFn) -> Any:
    """A valid report with one field replaced, removed or added, or an answer changed."""
    report = copy.deepcopy(VALID)
    kind = draw(st.sampled_from(["replace", "remove", "add", "answer", "text"]))
    field = draw(st.sampled_from(FIELDS))
    if kind == "replace":
        report[field] = draw(json_values)
    elif kind == "remove":
        del report[field]
    elif kind == "add":
        report[draw(keys)] = draw(json_values)
    elif kind == "answer":
        question = draw(st.sampled_from(sorted(report["answers"]) + ["extra"]))
        report["answers"][question] = draw(json_values)
    elif isinstance(report[field], str):
        text = report[field]
        cut = draw(st.integers(0, len(text)))
        report[field] = text[:cut] + draw(texts) + text[cut + 1 :]
    return report


@given(json_values)
@settings(max_examples=300, deadline=None)
def test_parser_refuses_any_json_value_with_report_error_only(value: Any) -> None:
    for parse in (check_structure, lambda v: parse_report(v, SURVEY)):
        try:
            parse(value)
        except ReportError:
            pass


@given(mutated_reports())
@settings(max_examples=300, deadline=None)
def test_parser_refuses_mutated_reports_with_report_error_only(report: Any) -> None:
    try:
        parse_report(report, SURVEY)
    except ReportError:
        return
    assert report == VALID or json.dumps(report, sort_keys=True) == json.dumps(
        VALID, sort_keys=True
    )


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    store = SQLiteStore.in_data_dir(tmp_path_factory.mktemp("hostile"))
    store.migrate()
    create_survey(store, copy.deepcopy(SURVEY_DOC), who=OPERATOR)
    yield store
    store.close()


def n_of(store: SQLiteStore) -> int:
    return store.tallies(SURVEY.id)[0]


@given(st.one_of(json_values, st.lists(json_values, max_size=4)))
@FAST
def test_ingest_rejects_arbitrary_values_and_stores_nothing(hostile_store: Any, value: Any) -> None:
    before = n_of(hostile_store)
    outcomes = ingest(hostile_store, value)
    assert len(outcomes) == (len(value) if isinstance(value, list) else 1)
    assert {o.result for o in outcomes} <= {"rejected"}
    assert all(o.reason for o in outcomes)
    assert n_of(hostile_store) == before


@given(st.lists(mutated_reports(), min_size=1, max_size=3))
@FAST
def test_ingest_of_mutated_reports_counts_only_what_it_accepts(
    hostile_store: Any, reports: list[Any]
) -> None:
    before = n_of(hostile_store)
    outcomes = ingest(hostile_store, reports)
    assert len(outcomes) == len(reports)
    accepted = sum(o.result == "accepted" for o in outcomes)
    assert accepted <= 1  # only the one valid report (or an equal copy) can get in
    assert n_of(hostile_store) == before + accepted


# -- limits on bodies and batches ------------------------------------------------------------


@pytest.fixture
def small_app(tmp_path: Any) -> Any:
    return create_app(
        {"TESTING": True, "DATA_DIR": tmp_path / "d", "MAX_CONTENT_LENGTH": 65536, "MAX_BATCH": 5}
    )


def raw_post(app: Any, data: bytes) -> Any:
    return app.test_client().post(
        "/api/v1/reports", data=data, headers={"Content-Type": "application/json"}
    )


def test_deeply_nested_json_is_refused_cheaply(small_app: Any) -> None:
    started = time.monotonic()
    response = raw_post(small_app, b"[" * 60_000)
    assert response.status_code == 400 and "nested too deeply" in response.json["detail"]
    response = raw_post(small_app, b'{"a":' * 10_000 + b"1" + b"}" * 10_000)
    assert response.status_code == 400
    assert time.monotonic() - started < 2


def test_huge_json_is_refused_before_parsing(small_app: Any) -> None:
    huge = json.dumps({"reports": ["x" * 1000] * 200}).encode()
    started = time.monotonic()
    response = raw_post(small_app, huge)
    assert response.status_code == 413 and "65536 bytes" in response.json["detail"]
    assert time.monotonic() - started < 2
    assert raw_post(small_app, b"[" * 100_000).status_code == 413  # 100k '[': over the limit


def test_batches_over_the_limit_are_refused(small_app: Any) -> None:
    reports = [make_report(SURVEY, TRUTH, generate_key()) for _ in range(6)]
    response = small_app.test_client().post("/api/v1/reports", json={"reports": reports})
    assert response.status_code == 413 and "at most 5" in response.json["detail"]
