"""The report endpoint: the one path of every report POST, answered in front of Flask's request
handling, with or without rate limits, with the answers and problems every other route gives;
every other request passed on to Flask."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask, request_started
from gunicorn.http.errors import NoMoreData

from deniable.aggregator import create_app, credentials
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.report_endpoint import ReportEndpoint
from deniable.shared import Survey, make_report, sign_report
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import TOKEN, TRUTH

#: A rate limit no test reaches: the endpoint counts every report, and answers the same.
NEVER_REACHED = "1000000/minute"


def make_app(path, survey_doc: dict[str, Any], **config: Any) -> Flask:
    app = create_app({"TESTING": True, "DATA_DIR": path, "MAX_BATCH": 5, **config})
    with app.app_context():
        get_store().add_admin_token(credentials.digest(TOKEN), "tests", "2026-01-01T00:00:00Z")
        create_survey(get_store(), survey_doc, who=OPERATOR)
    return app


@pytest.fixture
def apps(tmp_path, survey_doc) -> tuple[Flask, Flask]:
    """Two aggregators with the same survey, without and with a rate limit: one report path."""
    fast = make_app(tmp_path / "fast", survey_doc)
    view = make_app(tmp_path / "view", survey_doc, RATE_LIMIT=NEVER_REACHED)
    assert isinstance(fast.wsgi_app, ReportEndpoint) and isinstance(view.wsgi_app, ReportEndpoint)
    return fast, view


@pytest.fixture
def flask_requests(apps) -> Iterator[dict[str, int]]:
    """How many requests reached each app's Flask request machinery."""
    counts = {"fast": 0, "view": 0}
    receivers = {}
    for name, app in zip(counts, apps, strict=True):

        def count(sender: Flask, name: str = name, **_: Any) -> None:
            counts[name] += 1

        receivers[name] = count
        request_started.connect(count, app)
    yield counts
    for name, app in zip(counts, apps, strict=True):
        request_started.disconnect(receivers[name], app)


def requests_to_send(survey: Survey) -> list[tuple[str, bytes, dict[str, str]]]:
    """(what, body, headers): every kind of answer the endpoint gives, in an order that
    makes duplicates and conflicts happen."""
    key = generate_key()
    first = make_report(survey, TRUTH, key)
    other = sign_report(
        {**make_report(survey, TRUTH, generate_key()), "report_id": first["report_id"]},
        generate_key(),
    )
    tampered = make_report(survey, TRUTH, generate_key())
    tampered["answers"]["smokes"] = 1 - tampered["answers"]["smokes"]
    float_answer = make_report(survey, TRUTH, generate_key())
    float_answer["answers"]["smokes"] = 1.0
    wrong_hash = sign_report(
        {**make_report(survey, TRUTH, generate_key()), "survey_hash": "0" * 64}, generate_key()
    )
    batch = [make_report(survey, TRUTH, generate_key()) for _ in range(3)]
    json_type = {"Content-Type": "application/json"}

    def js(value: object) -> bytes:
        return json.dumps(value).encode()

    return [
        ("accepted", js(first), json_type),
        ("duplicate", js(first), json_type),
        ("conflict", js(other), json_type),
        ("answered", js(make_report(survey, TRUTH, key)), json_type),
        ("tampered", js(tampered), json_type),
        ("float", js(float_answer), json_type),
        ("wrong hash", js(wrong_hash), json_type),
        ("no survey", js({**first, "survey": "nope"}), json_type),
        ("not a report", js("x"), json_type),
        ("batch", js({"reports": [*batch, first, {"v": 1}]}), json_type),
        ("batch as list", js([make_report(survey, TRUTH, generate_key())]), json_type),
        ("batch too big", js({"reports": batch * 2}), json_type),
        ("empty batch", js({"reports": []}), json_type),
        ("batch and more", js({"reports": batch, "x": 1}), json_type),
        (
            "charset",
            js(make_report(survey, TRUTH, generate_key())),
            {"Content-Type": "application/json; charset=utf-8"},
        ),
        ("malformed", b'{"v": 1', json_type),
        ("empty", b"", json_type),
        ("surrogate", js({**first, "report_id": "\ud800"}), json_type),
        ("text", js(first), {"Content-Type": "text/plain"}),
        (
            "problem type",
            js(make_report(survey, TRUTH, generate_key())),
            {"Content-Type": "application/problem+json"},
        ),
    ]


def test_every_report_post_takes_the_one_path(apps, survey_doc, flask_requests):
    survey = Survey.from_dict(survey_doc)
    fast, view = (app.test_client() for app in apps)
    statuses = {}
    for what, body, headers in requests_to_send(survey):
        ours = fast.post("/api/v1/reports", data=body, headers=headers)
        theirs = view.post("/api/v1/reports", data=body, headers=headers)
        assert ours.status_code == theirs.status_code, what
        assert ours.get_data() == theirs.get_data(), what
        assert sorted(ours.headers.items()) == sorted(theirs.headers.items()), what
        statuses[what] = ours.status_code
    assert statuses == {
        "accepted": 201,
        "duplicate": 200,
        "conflict": 409,
        "answered": 409,
        "tampered": 422,
        "float": 422,
        "wrong hash": 409,
        "no survey": 404,
        "not a report": 422,
        "batch": 200,
        "batch as list": 200,
        "batch too big": 413,
        "empty batch": 422,
        "batch and more": 422,
        "charset": 201,
        "malformed": 400,
        "empty": 400,
        "surrogate": 400,
        "text": 415,
        "problem type": 201,
    }
    # No report POST reached Flask's request handling, bad bodies included, limited or not.
    assert flask_requests == {"fast": 0, "view": 0}
    for app in apps:
        results = app.test_client().get(
            f"/api/v1/surveys/{survey.id}/results", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert results.get_json()["n"] == 7


def test_other_requests_reach_flask(apps, flask_requests):
    fast = apps[0].test_client()
    assert fast.get("/api/v1/reports").status_code == 405
    assert fast.get("/healthz").status_code == 200
    assert fast.post("/api/v1/reports/", json={}).status_code == 404
    assert flask_requests["fast"] == 3


def test_the_routes_view_is_the_same_path(apps, survey_doc):
    """The Flask route (which gives the path its 405 and OPTIONS) answers through the same
    function, should a request ever reach it."""
    app = apps[0]
    survey = Survey.from_dict(survey_doc)
    report = make_report(survey, TRUTH, generate_key())
    for body, via_route, then_direct in ((report, 201, 200), ({"reports": []}, 422, 422)):
        with app.test_request_context("/api/v1/reports", method="POST", json=body):
            via_flask = app.full_dispatch_request()
        direct = app.test_client().post("/api/v1/reports", json=body)
        assert (via_flask.status_code, direct.status_code) == (via_route, then_direct)
    assert via_flask.get_data() == direct.get_data()  # the same problem, word for word


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_over_the_limit_is_413(tmp_path, survey_doc, chunked):
    app = make_app(tmp_path, survey_doc, MAX_CONTENT_LENGTH=100)
    body = b"[" + b"1," * 100 + b"1]"
    extra = {"wsgi.input_terminated": True} if chunked else {}
    headers = {"Transfer-Encoding": "chunked"} if chunked else {}
    response = app.test_client().post(
        "/api/v1/reports",
        data=body,
        content_type="application/json",
        headers=headers,
        environ_overrides=extra,
    )
    assert response.status_code == 413 and "limit of 100 bytes" in response.get_json()["detail"]
    assert response.mimetype == "application/problem+json"


def test_a_broken_database_is_503_either_way(tmp_path, survey_doc, report_for, caplog):
    body = json.dumps(report_for(Survey.from_dict(survey_doc))).encode()
    (tmp_path / "file").write_text("not a directory")
    for config in ({}, {"RATE_LIMIT": NEVER_REACHED}):
        app = create_app({"DATA_DIR": tmp_path / "file" / "data", **config})
        response = app.test_client().post(
            "/api/v1/reports", data=body, content_type="application/json"
        )
        assert response.status_code == 503, config
        assert response.headers["Retry-After"] == "5"
        assert "database is unavailable" in response.get_json()["detail"]
    assert caplog.text.count("database unavailable") == 2


def test_an_unexpected_error_is_a_logged_500_without_internals(
    apps, survey_doc, monkeypatch, caplog
):
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr("deniable.aggregator.web.report_endpoint.ingest", boom)
    body = json.dumps(make_report(Survey.from_dict(survey_doc), TRUTH, generate_key()))
    for app in apps:
        with caplog.at_level(logging.ERROR):
            response = app.test_client().post(
                "/api/v1/reports", data=body, content_type="application/json"
            )
        assert response.status_code == 500
        assert "secret internals" not in response.get_data(as_text=True)
    assert caplog.text.count("RuntimeError: secret internals") == 2  # in the log, twice


class _CutShort:
    """A request body the server cannot finish reading, as gunicorn reports it."""

    def read(self, *args: Any) -> bytes:
        raise NoMoreData(b"")


def test_a_body_the_server_cannot_read_is_400(apps):
    details = []
    for app in apps:
        response = app.test_client().post(
            "/api/v1/reports",
            data=b"{}",
            content_type="application/json",
            environ_overrides={"wsgi.input": _CutShort(), "CONTENT_LENGTH": "100"},
        )
        assert response.status_code == 400
        assert response.mimetype == "application/problem+json"
        details.append(response.get_json()["detail"])
    assert all("body could not be read" in detail for detail in details)


def test_retention_ticks_in_front_of_the_endpoint(tmp_path, survey_doc, report_for):
    app = make_app(tmp_path, survey_doc, RETENTION_DAYS=30)
    timer = app.extensions["deniable.retention"]
    assert timer._due == 0.0
    report = report_for(Survey.from_dict(survey_doc))
    assert app.test_client().post("/api/v1/reports", json=report).status_code == 201
    assert timer._due > 0.0
