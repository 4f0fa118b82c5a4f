"""Dashboard sessions are server-side: logout and token revocation end every copy of the cookie,
a login lasts DENIABLE_SESSION_HOURS, the cookie holds neither the token nor its hash, and a
login returns to a dashboard page without a query it did not produce."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator import credentials
from deniable.aggregator.cli.core import cli
from deniable.aggregator.credentials import digest
from deniable.aggregator.store.sqlite import DB_FILE
from deniable.aggregator.surveys import utc_now
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.sessions import SESSION_ID, new_session_id
from deniable.shared.survey import format_timestamp
from tests.dashboard.conftest import SECRET_TITLE, TOKEN, csrf_of

COOKIE = "session"


def _cookie(client: FlaskClient) -> str:
    found = client.get_cookie(COOKIE)
    assert found is not None, "no session cookie"
    return found.value


def _copy_of(app: Flask, client: FlaskClient) -> FlaskClient:
    """Another browser holding a copy of the client's session cookie."""
    other = app.test_client()
    other.set_cookie(COOKIE, _cookie(client))
    return other


def _is_login_page(client: FlaskClient, path: str = "/surveys/habits") -> bool:
    response = client.get(path)
    if response.status_code != 302 or not response.headers["Location"].startswith("/login"):
        return False
    html = client.get(path, follow_redirects=True).get_data(as_text=True)
    return 'name="token"' in html and SECRET_TITLE not in html


def _log_in(client: FlaskClient, token: str, **extra: str) -> str:
    csrf = csrf_of(client.get("/login").get_data(as_text=True))
    response = client.post("/login", data={"token": token, "csrf_token": csrf, **extra})
    assert response.status_code == 302, response.get_data(as_text=True)
    return response.headers["Location"]


def _sessions(app: Flask) -> list[tuple[str, ...]]:
    with sqlite3.connect(Path(app.config["DATA_DIR"]) / DB_FILE) as conn:
        return conn.execute("SELECT * FROM sessions").fetchall()


def test_a_cookie_copied_before_logout_gets_the_login_page_afterwards(
    app: Flask, researcher: FlaskClient
) -> None:
    copy = _copy_of(app, researcher)
    assert copy.get("/surveys/habits").status_code == 200  # the copy works while logged in
    csrf = csrf_of(researcher.get("/").get_data(as_text=True))
    assert researcher.post("/logout", data={"csrf_token": csrf}).status_code == 302
    assert _is_login_page(copy)
    assert _is_login_page(researcher)
    assert _sessions(app) == []


def test_logging_out_ends_only_that_session(app: Flask, researcher: FlaskClient) -> None:
    other = app.test_client()
    _log_in(other, TOKEN)
    csrf = csrf_of(researcher.get("/").get_data(as_text=True))
    researcher.post("/logout", data={"csrf_token": csrf})
    assert other.get("/surveys/habits").status_code == 200


def test_a_session_opened_before_revocation_gets_the_login_page_afterwards(app: Flask) -> None:
    with app.app_context():
        get_store().add_admin_token(digest("bobs-token"), "bob", utc_now())
    alice, bob = app.test_client(), app.test_client()
    _log_in(alice, TOKEN)  # the fixture's token, named "tests"
    _log_in(bob, "bobs-token")
    copy = _copy_of(app, alice)
    assert copy.get("/").status_code == 200
    revoked = app.test_cli_runner().invoke(cli, ["revoke-token", "tests"])
    assert revoked.exit_code == 0, revoked.output
    assert _is_login_page(alice) and _is_login_page(copy)
    assert bob.get("/surveys/habits").status_code == 200
    csrf = csrf_of(alice.get("/login").get_data(as_text=True))
    refused = alice.post("/login", data={"token": TOKEN, "csrf_token": csrf})
    assert refused.status_code == 401


def test_the_cookie_holds_neither_the_token_nor_its_stored_hash(
    app: Flask, researcher: FlaskClient
) -> None:
    cookie = _cookie(researcher)
    serializer = app.session_interface.get_signing_serializer(app)
    content = serializer.loads(cookie)
    assert set(content) <= {SESSION_ID, "csrf_token", "_flashes"}, content
    text = json.dumps(content)
    for secret in (TOKEN, digest(TOKEN)):
        assert secret not in text and secret not in cookie
    # The store keeps the session id's hash only, tied to the token's stored hash.
    [(stored, token_hash, created, expires)] = _sessions(app)
    assert stored == digest(content[SESSION_ID]) and token_hash == digest(TOKEN)
    assert content[SESSION_ID] not in json.dumps(_sessions(app))
    hours = app.config["SESSION_HOURS"]
    assert datetime.fromisoformat(expires) - datetime.fromisoformat(created) == timedelta(
        hours=hours
    )


def test_a_login_replaces_a_planted_session_id(app: Flask, client: FlaskClient) -> None:
    client.get("/login")
    with client.session_transaction() as saved:
        saved[SESSION_ID] = planted = new_session_id()
    _log_in(client, TOKEN)
    with client.session_transaction() as saved:
        assert saved[SESSION_ID] != planted
    assert [row[0] for row in _sessions(app)] == [digest(saved[SESSION_ID])]


def _session_opened(app: Flask, client: FlaskClient, hours_ago: float) -> None:
    """Give the client a session opened `hours_ago`, expiring SESSION_HOURS after that."""
    opened = datetime.now(UTC) - timedelta(hours=hours_ago)
    session_id = new_session_id()
    with app.app_context():
        assert get_store().open_session(
            digest(session_id),
            credentials.digest(TOKEN),
            format_timestamp(opened),
            format_timestamp(opened + timedelta(hours=app.config["SESSION_HOURS"])),
        )
    client.get("/login")
    with client.session_transaction() as saved:
        saved[SESSION_ID] = session_id


def test_a_session_past_session_hours_is_refused(app: Flask, client: FlaskClient) -> None:
    hours = app.config["SESSION_HOURS"]
    _session_opened(app, client, hours - 1 / 60)  # a minute left
    assert client.get("/surveys/habits").status_code == 200
    _session_opened(app, client, hours + 1 / 60)  # a minute over
    assert _is_login_page(client)
    assert len(_sessions(app)) == 1  # the expired session is deleted, the live one stays


def test_lowering_session_hours_ends_older_sessions(app: Flask, client: FlaskClient) -> None:
    _session_opened(app, client, 2)
    assert client.get("/").status_code == 200
    app.config["SESSION_HOURS"] = 1
    assert _is_login_page(client, "/")


def test_a_cookie_without_a_stored_session_is_refused(app: Flask, client: FlaskClient) -> None:
    client.get("/login")
    for forged in (new_session_id(), digest(TOKEN), "x" * 43, 7):
        with client.session_transaction() as saved:
            saved[SESSION_ID] = forged
            saved["token"] = digest(TOKEN)  # what the cookie held before sessions were stored
        assert _is_login_page(client, "/")


FORMULA = "smokes ~ {C.__globals__['__builtins__']['__import__']('os').system('id')}"


@pytest.mark.parametrize(
    ("target", "lands"),
    [
        (f"/surveys/x/analysis?formula={quote(FORMULA)}", "/surveys/x/analysis"),
        (
            f"/surveys/habits/analysis?question=smokes&by=party&formula={quote(FORMULA)}",
            "/surveys/habits/analysis?question=smokes&by=party",
        ),
        ("/surveys/habits?confidence=0.9&candidates=Paris", "/surveys/habits?confidence=0.9"),
        ("/surveys/habits?confidence=0.9%3Cb%3E&simultaneous=1", "/surveys/habits?simultaneous=1"),
        ("/surveys/habits?confidence=0.9&confidence=0.8", "/surveys/habits?confidence=0.9"),
        ("/surveys/habits/analysis?question=Smokes%21", "/surveys/habits/analysis"),
        (
            "/surveys/new?epsilon=1&margin=0.05&mechanism=rr&document=x",
            "/surveys/new?epsilon=1&margin=0.05&mechanism=rr",
        ),
        ("/surveys/new?mechanism=evil", "/surveys/new"),
        ("/surveys/habits/results.csv?candidates=%3Dcmd", "/surveys/habits/results.csv"),
        ("/surveys/habits?" + "&".join(["simultaneous=1"] * 60), "/surveys/habits"),
        ("/api/v1/surveys?x=1", "/"),
        ("/logout", "/"),
        ("/login?next=//evil.example", "/"),
        ("/surveys/habits%2F..", "/"),
        ("/surveys/habits#frag", "/"),
        ("/nosuch/page", "/"),
        ("/surveys/habits/close", "/"),  # a POST-only page
    ],
)
def test_login_next_keeps_only_the_dashboards_read_only_query(
    client: FlaskClient, target: str, lands: str
) -> None:
    shown = client.get("/login", query_string={"next": target}).get_data(as_text=True)
    assert f'name="next" value="{lands}"' in shown.replace("&amp;", "&")
    assert _log_in(client, TOKEN, next=target) == lands
