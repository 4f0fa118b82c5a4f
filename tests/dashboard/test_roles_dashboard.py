"""Roles on the dashboard (docs/accounts.md): THE DASHBOARD MATRIX of principals x every
dashboard route, two teams apart, sessions that die with their token, the People tab, the
Accounts page and the audit log."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator import accounts
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.credentials import digest
from deniable.aggregator.surveys import utc_now
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.sessions import SESSION_ID, new_session_id
from deniable.shared.survey import format_timestamp
from tests.dashboard.conftest import SECRET_TITLE, TOKEN, csrf_of

# -- principals ------------------------------------------------------------------------------

#: Who asks: the fixture's admin token, alice (owner of "habits" and "empty"), bob (analyst on
#: "habits"), a read-only token of alice, a token of alice limited to "empty", an expired and a
#: revoked token of alice, and no session at all.
PRINCIPALS = ("admin", "owner", "analyst", "read-only", "scoped", "expired", "revoked", "none")
LIVE = ("admin", "owner", "analyst", "read-only", "scoped")
DEAD = ("expired", "revoked", "none")


def _stamp(moment: datetime) -> str:
    return format_timestamp(moment)


def _make_people(app: Flask) -> dict[str, str]:
    """Accounts alice (owner of both surveys), bob (analyst on habits), dave (no role) and
    their tokens; the token text of each principal that logs in with one."""
    tokens: dict[str, str] = {"admin": TOKEN}
    with app.app_context():
        store = get_store()
        for name in ("alice", "bob", "dave"):
            accounts.create_account(store, OPERATOR, name)
        for survey in ("habits", "empty"):
            accounts.grant(store, OPERATOR, survey, "alice", "owner")
        accounts.grant(store, OPERATOR, "habits", "bob", "analyst")
        tokens["owner"], _ = accounts.create_token(store, OPERATOR, "alice")
        tokens["analyst"], _ = accounts.create_token(store, OPERATOR, "bob")
        tokens["read-only"], _ = accounts.create_token(store, OPERATOR, "alice", read_only=True)
        tokens["scoped"], _ = accounts.create_token(store, OPERATOR, "alice", surveys=["empty"])
        tokens["revoked"], _ = accounts.create_token(store, OPERATOR, "alice", name="to-revoke")
        tokens["spare"], _ = accounts.create_token(store, OPERATOR, "dave", name="spare")
    return tokens


def _log_in(client: FlaskClient, token: str) -> None:
    csrf = csrf_of(client.get("/login").get_data(as_text=True))
    response = client.post("/login", data={"token": token, "csrf_token": csrf})
    assert response.status_code == 302, response.get_data(as_text=True)


EXPIRED_TOKEN = "alices-short-lived-token"


def _expired_session(app: Flask, client: FlaskClient) -> None:
    """A session of alice's opened while its token was live; the token expired since."""
    now = datetime.now(UTC)
    token = EXPIRED_TOKEN
    session_id = new_session_id()
    with app.app_context():
        store = get_store()
        alice = store.get_account("alice")
        assert alice is not None
        store.add_token(
            digest(token),
            alice.id,
            "short",
            _stamp(now - timedelta(hours=2)),
            expires_at=_stamp(now - timedelta(minutes=1)),
        )
        hours = app.config["SESSION_HOURS"]
        opened = now - timedelta(hours=1)
        assert store.open_session(
            digest(session_id),
            digest(token),
            _stamp(opened),
            _stamp(opened + timedelta(hours=hours)),
        )
    client.get("/login")
    with client.session_transaction() as saved:
        saved[SESSION_ID] = session_id


def _client_of(app: Flask, who: str, tokens: dict[str, str]) -> FlaskClient:
    """A browser with a session of `who` (dead ones: opened while live, dead since)."""
    client = app.test_client()
    if who in LIVE:
        _log_in(client, tokens[who])
    elif who == "revoked":
        _log_in(client, tokens["revoked"])
        with app.app_context():
            accounts.revoke_token(get_store(), OPERATOR, tokens["revoked"])
    elif who == "expired":
        _expired_session(app, client)
    return client


# -- the matrix ------------------------------------------------------------------------------

OK, NOT_FOUND, FORBIDDEN, LOGIN, REFUSED = "ok", "404", "403", "login", "401"

#: Expected outcome per principal, by the kind of route.
PUBLIC = dict.fromkeys(PRINCIPALS, OK)
LISTING = {**dict.fromkeys(LIVE, OK), **dict.fromkeys(DEAD, LOGIN)}
READ = {
    "admin": OK,
    "owner": OK,
    "analyst": OK,
    "read-only": OK,
    "scoped": NOT_FOUND,
    **dict.fromkeys(DEAD, LOGIN),
}
CHANGE = {
    "admin": OK,
    "owner": OK,
    "analyst": FORBIDDEN,
    "read-only": FORBIDDEN,
    "scoped": NOT_FOUND,
    **dict.fromkeys(DEAD, LOGIN),
}
CREATE = {
    "admin": OK,
    "owner": OK,
    "analyst": OK,
    "read-only": FORBIDDEN,
    "scoped": FORBIDDEN,
    **dict.fromkeys(DEAD, LOGIN),
}
ADMIN = {
    "admin": OK,
    **dict.fromkeys(("owner", "analyst", "read-only", "scoped"), FORBIDDEN),
    **dict.fromkeys(DEAD, LOGIN),
}
LOGIN_POST = {**dict.fromkeys(LIVE, OK), **dict.fromkeys(DEAD, REFUSED)}
LOGOUT = dict.fromkeys(PRINCIPALS, LOGIN)
#: A series none of whose waves the principal may read (here: none exists) is unknown.
UNSEEN = {**dict.fromkeys(LIVE, NOT_FOUND), **dict.fromkeys(DEAD, LOGIN)}

NEW_DOC = {
    "id": "made-here",
    "title": "Made on the dashboard",
    "questions": [{"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0}],
}

#: Every dashboard route and method, in the order the matrix requests them (changes last, the
#: session's end at the very end): (endpoint, method, path, form, expected outcomes). A form
#: value `{token}` is the principal's own token; `{n}` a number unique to the principal.
ROUTES: list[tuple[str, str, str, dict[str, str], dict[str, str]]] = [
    ("dashboard.static", "GET", "/assets/dashboard.css", {}, PUBLIC),
    ("dashboard.login", "GET", "/login", {}, PUBLIC),
    ("dashboard.login", "POST", "/login", {"token": "{token}"}, LOGIN_POST),
    ("dashboard.surveys", "GET", "/", {}, LISTING),
    ("dashboard.survey", "GET", "/surveys/habits", {}, READ),
    ("dashboard.qr_code", "GET", "/surveys/habits/qr.svg", {}, READ),
    ("dashboard.count", "GET", "/surveys/habits/count.json", {}, READ),
    ("dashboard.analysis", "GET", "/surveys/habits/analysis?question=smokes&by=party", {}, READ),
    ("dashboard.analysis", "POST", "/surveys/habits/analysis", {"formula": "smokes ~ 1"}, READ),
    ("dashboard.download_csv", "GET", "/surveys/habits/results.csv", {}, READ),
    ("dashboard.download_reports", "GET", "/surveys/habits/reports.jsonl", {}, READ),
    ("dashboard.download_answers", "GET", "/surveys/habits/answers.csv", {}, READ),
    ("dashboard.download_stat_file", "GET", "/surveys/habits/export.sav", {}, READ),
    (
        "dashboard.download_r_script",
        "GET",
        "/surveys/habits/analysis.R?formula=smokes~1",
        {},
        READ,
    ),
    ("dashboard.series", "GET", "/series/habits-series", {}, UNSEEN),
    ("dashboard.people", "GET", "/surveys/habits/people", {}, CHANGE),
    (
        "dashboard.grant",
        "POST",
        "/surveys/habits/people",
        {"account": "dave", "role": "analyst"},
        CHANGE,
    ),
    ("dashboard.revoke", "POST", "/surveys/habits/people/revoke", {"account": "dave"}, CHANGE),
    ("dashboard.survey_audit", "GET", "/surveys/habits/audit", {}, CHANGE),
    ("dashboard.survey_audit_jsonl", "GET", "/surveys/habits/audit.jsonl", {}, CHANGE),
    ("dashboard.invitations", "POST", "/surveys/habits/invitations", {"count": "3"}, CHANGE),
    ("dashboard.new_survey", "GET", "/surveys/new", {}, CREATE),
    (
        "dashboard.new_survey",
        "POST",
        "/surveys/new",
        {"document": json.dumps({**NEW_DOC, "id": "made-{n}"})},
        CREATE,
    ),
    ("dashboard.accounts_page", "GET", "/accounts", {}, ADMIN),
    ("dashboard.create_account", "POST", "/accounts", {"name": "new-{n}"}, ADMIN),
    ("dashboard.create_token", "POST", "/accounts/tokens", {"account": "dave"}, ADMIN),
    (
        "dashboard.revoke_token",
        "POST",
        "/accounts/tokens/revoke",
        {"token_id": "{spare}"},
        ADMIN,
    ),
    ("dashboard.audit_log", "GET", "/audit", {}, ADMIN),
    ("dashboard.close", "POST", "/surveys/habits/close", {}, CHANGE),
    ("dashboard.logout", "POST", "/logout", {}, LOGOUT),
]


def test_the_table_covers_every_dashboard_route(app: Flask) -> None:
    """A new dashboard route fails here until the matrix says who may use it."""
    served = {
        (rule.endpoint, method)
        for rule in app.url_map.iter_rules()
        if rule.endpoint.startswith("dashboard.")
        for method in rule.methods or ()
        if method not in ("HEAD", "OPTIONS")
    }
    assert served == {(endpoint, method) for endpoint, method, *_ in ROUTES}
    for *_, expected in ROUTES:
        assert set(expected) == set(PRINCIPALS)


def _outcome(response: Any) -> str:
    status = response.status_code
    if status == 302:
        return LOGIN if response.headers["Location"].startswith("/login") else OK
    return {200: OK, 401: REFUSED, 403: FORBIDDEN, 404: NOT_FOUND}.get(status, str(status))


@pytest.mark.parametrize("who", PRINCIPALS)
def test_the_dashboard_matrix(app: Flask, who: str) -> None:
    tokens = _make_people(app)
    with app.app_context():
        spare = accounts.list_tokens(get_store(), OPERATOR, "dave")[0].id
    tokens["expired"], tokens["none"] = EXPIRED_TOKEN, "not-a-token-of-this-aggregator"
    client = _client_of(app, who, tokens)
    unknown = app.test_client()
    _log_in(unknown, TOKEN)
    unknown_page = unknown.get("/surveys/no-such-survey").get_data(as_text=True)
    seen = {}
    for endpoint, method, path, form, expected in ROUTES:
        values = {"token": tokens[who], "n": str(PRINCIPALS.index(who)), "spare": spare}
        data = {}
        for key, value in form.items():
            for name, filled in values.items():
                value = value.replace("{" + name + "}", filled)
            data[key] = value
        if method == "POST":
            data["csrf_token"] = csrf_of(client.get("/login").get_data(as_text=True))
            response = client.post(path, data=data)
        else:
            response = client.get(path)
        body = response.get_data().decode("utf-8", "replace")  # .sav is binary
        seen[(endpoint, method)] = got = _outcome(response)
        want = expected[who]
        assert got == want, (who, endpoint, method, response.status_code, body[:300])
        if got == NOT_FOUND:  # word for word the page of a survey that does not exist
            assert body == unknown_page, (who, endpoint, method)
        if got == FORBIDDEN:
            assert "Not allowed" in body and SECRET_TITLE not in body, (who, endpoint)
            assert re.search(r"read-only|needs|limited to some surveys", body), body
        if got == LOGIN:
            assert SECRET_TITLE not in body
        if endpoint == "dashboard.login" and method == "POST" and who in DEAD:
            said = {"expired": "expired", "revoked": "revoked", "none": "not valid"}[who]
            assert said in body, body
    assert len(seen) == len(ROUTES)


def test_a_forbidden_action_says_which_role_it_needs(app: Flask) -> None:
    tokens = _make_people(app)
    bob = _client_of(app, "analyst", tokens)
    csrf = csrf_of(bob.get("/login").get_data(as_text=True))
    page = bob.post("/surveys/habits/close", data={"csrf_token": csrf})
    assert page.status_code == 403
    assert "&#39;bob&#39; is analyst on survey &#39;habits&#39;; close needs owner" in (
        page.get_data(as_text=True)
    )
    with app.app_context():
        assert not get_store().get_survey("habits").closed  # type: ignore[union-attr]


# -- what each principal is shown --------------------------------------------------------------


def _links(html: str) -> set[str]:
    return set(re.findall(r'(?:href|action)="([^"]+)"', html))


def test_buttons_and_links_show_only_what_the_principal_may_use(app: Flask) -> None:
    tokens = _make_people(app)
    shown = {who: _client_of(app, who, tokens) for who in ("admin", "owner", "analyst")}
    shown["read-only"] = _client_of(app, "read-only", tokens)
    pages = {
        who: client.get("/surveys/habits").get_data(as_text=True) for who, client in shown.items()
    }
    manage = {"/surveys/habits/close", "/surveys/habits/invitations"}
    tabs = {"/surveys/habits/people", "/surveys/habits/audit"}
    for who in ("admin", "owner"):
        assert manage | tabs <= _links(pages[who]), who
    for who in ("analyst", "read-only"):
        assert not (manage | tabs) & _links(pages[who]), who
        assert "/surveys/habits/results.csv" in _links(pages[who].replace("&amp;", "&")) or any(
            link.startswith("/surveys/habits/results.csv") for link in _links(pages[who])
        )
    nav = {who: _links(client.get("/").get_data(as_text=True)) for who, client in shown.items()}
    assert {"/accounts", "/audit", "/surveys/new"} <= nav["admin"]
    assert "/surveys/new" in nav["owner"] and "/surveys/new" in nav["analyst"]
    for who in ("owner", "analyst", "read-only"):
        assert not {"/accounts", "/audit"} & nav[who], who
    assert "/surveys/new" not in nav["read-only"]


def test_two_teams_each_see_only_their_survey(app: Flask) -> None:
    with app.app_context():
        store = get_store()
        for team, survey in (("team-a", "habits"), ("team-b", "empty")):
            accounts.create_account(store, OPERATOR, team)
            accounts.grant(store, OPERATOR, survey, team, "owner")
        a_token, _ = accounts.create_token(store, OPERATOR, "team-a")
        b_token, _ = accounts.create_token(store, OPERATOR, "team-b")
    team_a, team_b = app.test_client(), app.test_client()
    _log_in(team_a, a_token)
    _log_in(team_b, b_token)
    listing_a = team_a.get("/").get_data(as_text=True)
    listing_b = team_b.get("/").get_data(as_text=True)
    assert "/surveys/habits" in listing_a and "/surveys/empty" not in listing_a
    assert "/surveys/empty" in listing_b and "/surveys/habits" not in listing_b
    assert SECRET_TITLE in listing_a and SECRET_TITLE not in listing_b
    for own, other, client in (("habits", "empty", team_a), ("empty", "habits", team_b)):
        for tail in ("", "/results.csv", "/reports.jsonl", "/analysis", "/qr.svg", "/people"):
            assert client.get(f"/surveys/{own}{tail}").status_code == 200, (own, tail)
            assert client.get(f"/surveys/{other}{tail}").status_code == 404, (other, tail)
    csv = team_a.get("/surveys/habits/results.csv").get_data(as_text=True)
    assert "smokes" in csv
    breakdown = team_b.get("/surveys/habits/analysis?question=smokes&by=party")
    assert breakdown.status_code == 404 and "smokes" not in breakdown.get_data(as_text=True)


# -- sessions end with their token -----------------------------------------------------------


@pytest.mark.parametrize("how", ["service", "store"])
def test_a_session_ends_on_the_next_request_after_its_token_is_revoked(
    app: Flask, how: str
) -> None:
    tokens = _make_people(app)
    alice = _client_of(app, "owner", tokens)
    assert alice.get("/surveys/habits").status_code == 200
    with app.app_context():
        store = get_store()
        if how == "service":
            accounts.revoke_token(store, OPERATOR, tokens["owner"])
        else:
            assert store.revoke_token(digest(tokens["owner"])[:12], utc_now()) is not None
    response = alice.get("/surveys/habits")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    page = alice.get("/login").get_data(as_text=True)
    again = alice.post("/login", data={"token": tokens["owner"], "csrf_token": csrf_of(page)})
    assert again.status_code == 401 and "revoked" in again.get_data(as_text=True)


def test_an_expired_token_is_refused_at_the_login_saying_so(app: Flask) -> None:
    _make_people(app)
    now = datetime.now(UTC)
    with app.app_context():
        store = get_store()
        alice = store.get_account("alice")
        assert alice is not None
        store.add_token(
            digest("an-expired-token"),
            alice.id,
            "old",
            _stamp(now - timedelta(days=2)),
            expires_at=_stamp(now - timedelta(days=1)),
        )
    client = app.test_client()
    csrf = csrf_of(client.get("/login").get_data(as_text=True))
    refused = client.post("/login", data={"token": "an-expired-token", "csrf_token": csrf})
    assert refused.status_code == 401 and "expired" in refused.get_data(as_text=True)
    assert client.get("/").headers["Location"].startswith("/login")


# -- the People tab --------------------------------------------------------------------------


def _people(client: FlaskClient) -> str:
    return client.get("/surveys/habits/people").get_data(as_text=True)


def test_people_grant_and_revoke_with_csrf(app: Flask) -> None:
    tokens = _make_people(app)
    alice = _client_of(app, "owner", tokens)
    page = _people(alice)
    assert re.search(r"<th scope=\"row\">alice</th>\s*<td>owner</td>", page)
    assert re.search(r"<th scope=\"row\">bob</th>\s*<td>analyst</td>", page)
    assert ">dave<" not in page
    without = alice.post("/surveys/habits/people", data={"account": "dave", "role": "owner"})
    assert without.status_code == 400 and "Form expired" in without.get_data(as_text=True)
    forged = alice.post(
        "/surveys/habits/people", data={"account": "dave", "role": "owner", "csrf_token": "x"}
    )
    assert forged.status_code == 400
    with app.app_context():
        assert "habits" not in get_store().roles_of(get_store().get_account("dave").id)  # type: ignore[union-attr]
    made = alice.post(
        "/surveys/habits/people",
        data={"account": "dave", "role": "owner", "csrf_token": csrf_of(page)},
    )
    assert made.status_code == 302
    page = alice.get(made.headers["Location"]).get_data(as_text=True)
    assert "dave is now owner on this survey." in page
    assert re.search(r"<th scope=\"row\">dave</th>\s*<td>owner</td>", page)
    revoked_without = alice.post("/surveys/habits/people/revoke", data={"account": "dave"})
    assert revoked_without.status_code == 400
    gone = alice.post(
        "/surveys/habits/people/revoke", data={"account": "dave", "csrf_token": csrf_of(page)}
    )
    assert gone.status_code == 302
    page = _people(alice)
    assert ">dave<" not in page.split('id="people"')[1].split("</table>")[0]
    with app.app_context():
        actions = [e.action for e in get_store().iter_audit(survey="habits")]
    assert actions.count("grant") == 3 and actions.count("revoke") == 1  # 2 in the setup


def test_people_errors_are_said_on_the_page(app: Flask) -> None:
    tokens = _make_people(app)
    alice = _client_of(app, "owner", tokens)
    csrf = csrf_of(_people(alice))
    unknown = alice.post(
        "/surveys/habits/people", data={"account": "nobody", "role": "analyst", "csrf_token": csrf}
    )
    html = unknown.get_data(as_text=True)
    assert unknown.status_code == 404 and "no account &#39;nobody&#39;" in html
    assert 'role="alert"' in html and 'value="nobody"' in html and "Grant a role" in html
    bad_role = alice.post(
        "/surveys/habits/people", data={"account": "bob", "role": "admin", "csrf_token": csrf}
    )
    assert bad_role.status_code == 422 and "expected owner or analyst" in bad_role.get_data(
        as_text=True
    )
    last = alice.post(
        "/surveys/habits/people/revoke", data={"account": "alice", "csrf_token": csrf}
    )
    assert last.status_code == 409 and "last owner" in last.get_data(as_text=True)
    with app.app_context():
        roles = get_store().roles_of(get_store().get_account("alice").id)  # type: ignore[union-attr]
    assert roles["habits"] == "owner"


# -- the Accounts page -----------------------------------------------------------------------


def test_an_admin_creates_an_account_and_a_token_that_logs_in(
    app: Flask, researcher: FlaskClient
) -> None:
    page = researcher.get("/accounts").get_data(as_text=True)
    made = researcher.post("/accounts", data={"name": "erin", "csrf_token": csrf_of(page)})
    assert made.status_code == 302
    page = researcher.get("/accounts").get_data(as_text=True)
    assert "Account &#39;erin&#39; created." in page
    assert re.search(r'<h2 id="account-[0-9]+">erin\s', page)
    taken = researcher.post("/accounts", data={"name": "erin", "csrf_token": csrf_of(page)})
    assert taken.status_code == 409 and "exists" in taken.get_data(as_text=True)
    shown = researcher.post(
        "/accounts/tokens",
        data={
            "account": "erin",
            "label": "laptop",
            "expires": "30d",
            "surveys": "empty",
            "csrf_token": csrf_of(page),
        },
    )
    html = shown.get_data(as_text=True)
    assert shown.status_code == 200 and "Copy it now" in html
    token = re.search(r'id="new-token" class="mono wide" readonly value="([^"]+)"', html)
    assert token, html
    token_text = token.group(1)
    assert token_text not in researcher.get("/accounts").get_data(as_text=True)  # shown once
    erin = app.test_client()
    _log_in(erin, token_text)
    listing = erin.get("/").get_data(as_text=True)
    assert "/surveys/empty" not in listing and "/surveys/habits" not in listing  # no role yet
    with app.app_context():
        accounts.grant(get_store(), OPERATOR, "empty", "erin", "analyst")
        accounts.grant(get_store(), OPERATOR, "habits", "erin", "analyst")
    listing = erin.get("/").get_data(as_text=True)
    assert "/surveys/empty" in listing and "/surveys/habits" not in listing  # limited to empty
    bad = researcher.post(
        "/accounts/tokens",
        data={"account": "erin", "expires": "forever", "csrf_token": csrf_of(page)},
    )
    assert bad.status_code == 400 and "expires" in bad.get_data(as_text=True)
    too_many = researcher.post(
        "/accounts/tokens",
        data={
            "account": "erin",
            "surveys": ",".join(f"s{i}" for i in range(5000)),
            "csrf_token": csrf_of(page),
        },
    )
    assert too_many.status_code == 400 and "at most" in too_many.get_data(as_text=True)
    with app.app_context():
        token_id = digest(token_text)[:12]
    revoked = researcher.post(
        "/accounts/tokens/revoke", data={"token_id": token_id, "csrf_token": csrf_of(page)}
    )
    assert revoked.status_code == 302
    assert erin.get("/").headers["Location"].startswith("/login")
    page = researcher.get("/accounts").get_data(as_text=True)
    assert f"Token {token_id} of &#39;erin&#39; is revoked." in page and "revoked 20" in page
    assert token_text not in page


# -- the audit log ---------------------------------------------------------------------------


def test_the_audit_pages_and_download(app: Flask) -> None:
    tokens = _make_people(app)
    alice = _client_of(app, "owner", tokens)
    alice.get("/surveys/habits/results.csv")
    alice.get("/surveys/habits?confidence=0.9")
    page = alice.get("/surveys/habits/audit").get_data(as_text=True)
    rows = re.findall(r"<tr>\s*<td class=\"nowrap\">([^<]+)</td>\s*<td>([^<]+)</td>", page)
    assert rows and all(account in ("alice", "operator") for _, account in rows)
    times = [time for time, _ in rows]
    assert times == sorted(times, reverse=True)  # newest first
    actions = re.findall(r"<td class=\"mono\">[^<]*</td>\s*<td>([a-z.]+)</td>", page)
    assert actions[0] == "audit" and "results.csv" in actions and "results" in actions
    download = alice.get("/surveys/habits/audit.jsonl")
    assert download.mimetype == "application/x-ndjson"
    lines = [json.loads(line) for line in download.get_data(as_text=True).splitlines()]
    assert lines and {line["survey"] for line in lines} == {"habits"}
    assert set(lines[0]) == {"time", "account", "token_id", "survey", "action", "params"}
    owner_id = digest(tokens["owner"])[:12]
    assert any(
        line["action"] == "results"
        and line["token_id"] == owner_id
        and line["params"].get("confidence") == 0.9
        for line in lines
    ), lines
    admin = _client_of(app, "admin", tokens)
    everything = admin.get("/audit").get_data(as_text=True)
    assert "token.create" in everything and '<th scope="col">Survey</th>' in everything
    for text in (download.get_data(as_text=True), page, everything):
        for token in tokens.values():
            assert token not in text


def test_the_audit_page_shows_the_newest_entries_up_to_its_limit(
    app: Flask, researcher: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deniable.aggregator.web.dashboard import audit_log as dashboard

    monkeypatch.setattr(dashboard, "AUDIT_PAGE_LIMIT", 3)
    for confidence in ("0.8", "0.9", "0.95", "0.99"):
        researcher.get(f"/surveys/habits?confidence={confidence}")
    page = researcher.get("/surveys/habits/audit").get_data(as_text=True)
    assert page.count('<td class="nowrap">') == 3
    assert "0.99" in page and "0.8," not in page and '"confidence": 0.8' not in page
    full = researcher.get("/surveys/habits/audit.jsonl").get_data(as_text=True).splitlines()
    assert len(full) >= 6
