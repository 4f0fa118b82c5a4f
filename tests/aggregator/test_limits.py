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
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.report_endpoint import ReportEndpoint
from deniable.shared import Survey
from tests.aggregator.conftest import SURVEY_DOC, TOKEN

PROBLEM = "application/problem+json"


def limited_app(tmp_path: Any, **config: Any) -> tuple[Flask, Survey]:
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "data", **config})
    with app.app_context():
        store = get_store()
        store.add_admin_token(credentials.digest(TOKEN), "tests", "2026-01-01T00:00:00Z")
        record, _ = create_survey(store, dict(SURVEY_DOC), who=OPERATOR)
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


def stored(app: Flask, survey: Survey) -> int:
    """The survey's number of stored reports."""
    with app.app_context():
        return get_store().tallies(survey.id)[0]


def results(response: Any) -> list[str]:
    assert response.status_code == 200, response.get_data(as_text=True)
    return [item["result"] for item in response.json["results"]]


def test_reports_are_limited_per_key_and_a_refused_batch_counts_nothing(tmp_path, report_for):
    app, survey = limited_app(tmp_path, RATE_LIMIT="3/minute")
    first = report_for(survey)  # its key sends it again below: each post counts against it
    assert post(app, first, address="192.0.2.1").status_code == 201
    batch = {"reports": [first, first, report_for(survey)]}
    assert results(post(app, batch, address="192.0.2.2")) == ["duplicate"] * 2 + ["accepted"]
    response = post(app, first, address="192.0.2.3")  # the key's fourth
    assert_429(response)
    assert "one key" in response.json["detail"]
    fresh = report_for(survey)
    assert_429(post(app, {"reports": [fresh, first]}, address="192.0.2.4"))
    assert stored(app, survey) == 2  # refused whole: `fresh` was not stored
    # ... and counted nothing, against the address or the fresh key
    assert [post(app, fresh, address="192.0.2.4").status_code for _ in range(3)] == [201, 200, 200]
    assert_429(post(app, fresh, address="192.0.2.4"))


def test_a_batch_of_k_counts_k_against_the_address(tmp_path, report_for):
    app, survey = limited_app(tmp_path, RATE_LIMIT="10/minute")
    assert (
        results(post(app, {"reports": [report_for(survey) for _ in range(6)]})) == ["accepted"] * 6
    )
    five = {"reports": [report_for(survey) for _ in range(5)]}
    response = post(app, five)
    assert_429(response)
    assert "counts 5, 4 left" in response.json["detail"]
    assert stored(app, survey) == 6
    assert results(post(app, [report_for(survey) for _ in range(4)])) == ["accepted"] * 4
    assert_429(post(app, report_for(survey)))  # 6 + 4 = 10: a single report is one too many
    assert results(post(app, five, address="192.0.2.2")) == ["accepted"] * 5  # per address
    assert stored(app, survey) == 15


def test_single_reports_after_a_batch_of_the_limit_are_refused(tmp_path, report_for):
    app, survey = limited_app(tmp_path, RATE_LIMIT="10/minute")
    assert (
        results(post(app, {"reports": [report_for(survey) for _ in range(10)]}))
        == ["accepted"] * 10
    )
    for _ in range(3):
        assert_429(post(app, report_for(survey)))
    assert stored(app, survey) == 10


def test_a_batch_no_window_admits_is_413_and_counts_nothing(tmp_path, report_for):
    app, survey = limited_app(tmp_path, RATE_LIMIT="100/hour;10/minute")
    response = post(app, {"reports": [report_for(survey) for _ in range(11)]})
    assert response.status_code == 413 and response.mimetype == PROBLEM
    detail = response.json["detail"]
    assert "DENIABLE_RATE_LIMIT" in detail and "at most 10 reports" in detail, detail
    assert "Retry-After" not in response.headers  # waiting would not help
    assert (
        results(post(app, {"reports": [report_for(survey) for _ in range(10)]}))
        == ["accepted"] * 10
    )


def test_enrollments_count_one_each(tmp_path):
    app, survey = limited_app(tmp_path, RATE_LIMIT="3/minute")

    def enroll(body: Any) -> Any:
        return app.test_client().post(
            f"/api/v1/surveys/{survey.id}/enrollments",
            json=body,
            environ_base={"REMOTE_ADDR": "192.0.2.1"},
        )

    shaped_like_a_batch = {"reports": [{"public_key": f"k{i}"} for i in range(3)]}
    assert [enroll(shaped_like_a_batch).status_code for _ in range(3)] == [422] * 3
    assert_429(enroll({}))


def test_the_rate_limit_sees_every_report_request(tmp_path, report_for):
    """Reports take one path with or without a limit: the report endpoint, which counts them."""

    def layers(app: Flask) -> list[type]:
        found, wsgi = [], app.wsgi_app
        while wsgi is not None:
            found.append(type(wsgi))
            wsgi = getattr(wsgi, "wsgi_app", getattr(wsgi, "app", None))
        return found

    limited, survey = limited_app(tmp_path, RATE_LIMIT="2/minute", TRUSTED_PROXIES=1)
    assert ReportEndpoint in layers(limited) and ReportEndpoint in layers(
        limited_app(tmp_path / "f")[0]
    )
    # Behind a trusted proxy the endpoint counts the forwarded address, as enrollments do.
    forwarded = lambda who: limited.test_client().post(  # noqa: E731
        "/api/v1/reports",
        json=report_for(survey),
        headers={"X-Forwarded-For": who},
        environ_base={"REMOTE_ADDR": "10.0.0.1"},
    )
    assert [forwarded("192.0.2.7").status_code for _ in range(2)] == [201, 201]
    assert_429(forwarded("192.0.2.7"))
    assert forwarded("192.0.2.8").status_code == 201


def test_rate_limit_setting_is_checked(tmp_path):
    from deniable.aggregator.config import ConfigError, from_env

    with pytest.raises(ConfigError, match="DENIABLE_RATE_LIMIT"):
        from_env({"DENIABLE_RATE_LIMIT": "lots"})
    assert from_env({"DENIABLE_RATE_LIMIT": "60/minute"})["RATE_LIMIT"] == "60/minute"


def test_rate_limit_storage_setting_is_checked_and_names_no_password():
    from deniable.aggregator.config import SETTINGS, ConfigError, from_env

    assert SETTINGS["RATE_LIMIT_STORAGE"].default == "memory://"
    url = "redis://:secret@cache.internal:6379/0"
    assert from_env({"DENIABLE_RATE_LIMIT_STORAGE": url})["RATE_LIMIT_STORAGE"] == url
    for bad in ("redis-host:6379", "postgres://:secret@db/x", "async+redis://h:1"):
        with pytest.raises(ConfigError, match="DENIABLE_RATE_LIMIT_STORAGE") as refused:
            from_env({"DENIABLE_RATE_LIMIT_STORAGE": bad})
        assert "secret" not in str(refused.value)


def test_an_unreachable_rate_limit_storage_answers_reports_503(tmp_path, report_for):
    """Clients queue a 503 and send again (the delivery policy); nothing is counted."""
    app, survey = limited_app(
        tmp_path,
        RATE_LIMIT="5/minute",
        RATE_LIMIT_STORAGE="redis://127.0.0.1:9",  # the discard port: nothing answers
    )
    response = post(app, report_for(survey))
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.headers["Retry-After"] == "5"
    assert "DENIABLE_RATE_LIMIT_STORAGE" in response.get_json()["detail"]


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


def test_failed_logins_from_one_ipv6_64_count_together(tmp_path):
    # A guesser with a /64 had 2**64 allowances: each new address, a fresh counter.
    app, _ = limited_app(tmp_path, LOGIN_LIMIT="2/minute", LOGIN_FAILURE_DELAY=0)
    assert login(app, "wrong", address="2001:db8:7::1").status_code == 401
    assert login(app, "wrong", address="2001:db8:7::2").status_code == 401
    assert_429(login(app, TOKEN, address="2001:db8:7::3"))
    assert login(app, TOKEN, address="2001:db8:8::1").status_code == 302


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


def test_an_ipv6_client_is_counted_by_its_64(tmp_path, report_for):
    # Each of a /64's addresses had an allowance of its own: a client could take a new one each time.
    app, survey = limited_app(tmp_path, RATE_LIMIT="2/minute")
    codes = [post(app, report_for(survey), f"2001:db8:1:2::{n}").status_code for n in (1, 2, 3)]
    assert codes == [201, 201, 429]
    assert post(app, report_for(survey), "2001:db8:1:3::1").status_code == 201  # another /64
    assert post(app, report_for(survey), "192.0.2.7").status_code == 201
    assert post(app, report_for(survey), "::ffff:192.0.2.7").status_code == 201
    assert_429(post(app, report_for(survey), "192.0.2.7"))  # the same IPv4 client, either form
