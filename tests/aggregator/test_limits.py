"""Abuse limits (per address, per key, failed logins) and the dashboard's security headers."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from deniable.aggregator import create_app, credentials
from deniable.aggregator.store.pool import get_store
from deniable.aggregator.surveys import create_survey
from deniable.shared import Survey
from tests.aggregator.conftest import SURVEY_DOC, TOKEN

PROBLEM = "application/problem+json"


def limited_app(tmp_path: Any, **config: Any) -> tuple[Flask, Survey]:
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "data", **config})
    with app.app_context():
        store = get_store()
        store.add_token(credentials.digest(TOKEN), "tests", "2026-01-01T00:00:00Z")
        record, _ = create_survey(store, dict(SURVEY_DOC))
    return app, Survey.from_dict(record.resolved)


def post(app: Flask, body: Any, address: str = "192.0.2.1") -> Any:
    return app.test_client().post(
        "/api/v1/reports", json=body, environ_base={"REMOTE_ADDR": address}
    )


def assert_429(response: Any) -> None:
    assert response.status_code == 429, response.get_data(as_text=True)
    assert response.mimetype == PROBLEM
    assert int(response.headers["Retry-After"]) >= 1
    assert "wait" in response.json["detail"]


def test_no_limits_unless_configured(tmp_path, report_for: Callable[..., Any]):
    app, survey = limited_app(tmp_path)
    for _ in range(12):
        assert post(app, report_for(survey)).status_code == 201


def test_reports_are_limited_per_address(tmp_path, report_for, caplog):
    app, survey = limited_app(tmp_path, RATE_LIMIT="3/minute")
    caplog.set_level(logging.DEBUG)
    for _ in range(3):
        assert post(app, report_for(survey)).status_code == 201
    assert_429(post(app, report_for(survey)))
    assert post(app, report_for(survey), address="192.0.2.2").status_code == 201
    enroll = lambda: app.test_client().post(  # noqa: E731  (each route counts on its own)
        f"/api/v1/surveys/{survey.id}/enrollments",
        json={},
        environ_base={"REMOTE_ADDR": "192.0.2.1"},
    )
    assert [enroll().status_code for _ in range(3)] == [422] * 3
    assert_429(enroll())
    assert "192.0.2." not in caplog.text  # no address reaches the logs


def test_reports_are_limited_per_key_and_each_report_of_a_batch_counts(tmp_path, report_for):
    app, survey = limited_app(tmp_path, RATE_LIMIT="2/minute")
    report = report_for(survey)
    assert post(app, report, address="192.0.2.1").status_code == 201
    assert post(app, report, address="192.0.2.2").status_code == 200  # duplicate
    response = post(app, report, address="192.0.2.3")
    assert_429(response)
    assert "one key" in response.json["detail"]
    batch = {"reports": [report_for(survey)] * 3}
    assert_429(post(app, batch, address="192.0.2.4"))


def test_rate_limit_setting_is_checked(tmp_path):
    from deniable.aggregator.config import ConfigError, from_env

    with pytest.raises(ConfigError, match="DENIABLE_RATE_LIMIT"):
        from_env({"DENIABLE_RATE_LIMIT": "lots"})
    assert from_env({"DENIABLE_RATE_LIMIT": "60/minute"})["RATE_LIMIT"] == "60/minute"


def login(app: Flask, token: str, address: str = "192.0.2.9") -> Any:
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    return client.post(
        "/login",
        data={"token": token, "csrf_token": csrf},
        environ_base={"REMOTE_ADDR": address},
    )


def test_failed_logins_are_slowed_and_limited(tmp_path):
    app, _ = limited_app(tmp_path, LOGIN_LIMIT="2/minute", LOGIN_FAILURE_DELAY=0.2)
    assert login(app, TOKEN).status_code == 302  # successes do not count
    started = time.monotonic()
    assert login(app, "wrong").status_code == 401
    assert time.monotonic() - started >= 0.2
    assert login(app, "wrong").status_code == 401
    assert_429(login(app, TOKEN))  # the address must wait, even with a valid token
    assert login(app, TOKEN, address="192.0.2.10").status_code == 302


def test_dashboard_security_headers(client):
    for path in ("/login", "/", "/assets/refresh.js"):
        headers = client.get(path).headers
        csp = headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert headers["Referrer-Policy"] == "no-referrer"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"


def test_templates_have_no_inline_script_or_style():
    from importlib import resources

    folder = resources.files("deniable.aggregator.web").joinpath("templates")
    for page in folder.iterdir():
        text = page.read_text("utf-8")
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), page.name
        assert " style=" not in text and "<style" not in text and "onclick" not in text, page.name


@pytest.mark.parametrize("bad", ["abc", "-5", "nan", "1e9"])
def test_the_login_failure_delay_must_be_seconds(bad: str) -> None:
    from deniable.aggregator.config import ConfigError, from_env

    with pytest.raises(ConfigError, match="^DENIABLE_LOGIN_FAILURE_DELAY: expected seconds"):
        from_env({"DENIABLE_LOGIN_FAILURE_DELAY": bad})
    assert from_env({"DENIABLE_LOGIN_FAILURE_DELAY": "0"})["LOGIN_FAILURE_DELAY"] == 0.0
