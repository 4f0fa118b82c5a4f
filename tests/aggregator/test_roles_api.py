"""THE MATRIX: every researcher route of the API, as every kind of principal, answers exactly
what docs/accounts.md says (allowed, 401, 403 or 404). The routes come from the app's url_map,
so a new /api/v1 route without a row here fails until someone says who may take it."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator import access, create_app, credentials
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.shared import make_report
from deniable.shared.signing import generate_key
from tests.aggregator.test_results_objects import BREAKDOWN, CROSSTAB, DOC, FORMULA, SURVEY, truth

NOW = "2026-01-01T00:00:00Z"
IGNORED_METHODS = {"HEAD", "OPTIONS"}
N = 300

#: Routes under /api/v1 that anyone may use: respondents read a survey, enroll and report.
RESPONDENT_ROUTES = {
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/api/v1/surveys/<survey_id>"),
    ("POST", "/api/v1/surveys/<survey_id>/enrollments"),
    ("POST", "/api/v1/reports"),
}

PRINCIPALS = ("admin", "owner", "analyst", "read_only", "scoped", "expired", "revoked", "none")

#: What each principal gets, by kind of route: "ok" (2xx), or the refusal's status. The
#: scoped token is an admin's, limited to carol's survey: it sees nothing of alice's.
OUTCOMES: dict[str, dict[str, Any]] = {
    "list": {"admin": "ok", "owner": "ok", "analyst": "ok", "read_only": "ok", "scoped": "ok"},
    "create": {"admin": "ok", "owner": "ok", "analyst": "ok", "read_only": 403, "scoped": 403},
    "read": {"admin": "ok", "owner": "ok", "analyst": "ok", "read_only": "ok", "scoped": 404},
    "change": {"admin": "ok", "owner": "ok", "analyst": 403, "read_only": 403, "scoped": 404},
}
for row in OUTCOMES.values():
    row.update(expired=401, revoked=401, none=401)


@dataclass(frozen=True)
class Case:
    """One researcher route: how to call it on alice's survey and which row of OUTCOMES."""

    kind: str
    path: str
    json: Any = None


OBJECTS = f"/api/v1/surveys/{DOC['id']}"
#: alice's series: one wave (a survey of its own), bob analyses it too.
SERIES = "objects-series"
#: Every researcher route: (method, rule) -> the call. alice owns both surveys, bob analyses.
ROUTES: dict[tuple[str, str], Case] = {
    ("GET", "/api/v1/surveys"): Case("list", "/api/v1/surveys"),
    ("POST", "/api/v1/surveys"): Case("create", "/api/v1/surveys", json="new"),
    ("GET", "/api/v1/surveys/<survey_id>/results"): Case("read", f"{OBJECTS}/results"),
    ("GET", "/api/v1/series/<series_id>/results"): Case("read", f"/api/v1/series/{SERIES}/results"),
    ("GET", "/api/v1/surveys/<survey_id>/results.csv"): Case("read", f"{OBJECTS}/results.csv"),
    ("GET", "/api/v1/surveys/<survey_id>/reports.jsonl"): Case("read", f"{OBJECTS}/reports.jsonl"),
    ("GET", "/api/v1/surveys/<survey_id>/answers.csv"): Case("read", f"{OBJECTS}/answers.csv"),
    ("GET", "/api/v1/surveys/<survey_id>/export.dta"): Case("read", f"{OBJECTS}/export.dta"),
    ("GET", "/api/v1/surveys/<survey_id>/export.sav"): Case("read", f"{OBJECTS}/export.sav"),
    ("GET", "/api/v1/surveys/<survey_id>/analysis.R"): Case(
        "read", f"{OBJECTS}/analysis.R?formula=smokes%20~%20adult"
    ),
    ("GET", "/api/v1/surveys/<survey_id>/breakdown"): Case(
        "read", f"{OBJECTS}/breakdown?question={BREAKDOWN[0]}&by={BREAKDOWN[1]}"
    ),
    ("GET", "/api/v1/surveys/<survey_id>/crosstab"): Case(
        "read", f"{OBJECTS}/crosstab?first={CROSSTAB[0]}&second={CROSSTAB[1]}"
    ),
    ("POST", "/api/v1/surveys/<survey_id>/regression"): Case(
        "read", f"{OBJECTS}/regression", json={"formula": FORMULA}
    ),
    ("POST", "/api/v1/surveys/<survey_id>/invitations"): Case(
        "change", "/api/v1/surveys/private/invitations", json={"count": 1}
    ),
    ("POST", "/api/v1/surveys/<survey_id>/close"): Case("change", f"{OBJECTS}/close"),
    ("GET", "/api/v1/surveys/<survey_id>/people"): Case("change", "/api/v1/surveys/private/people"),
    ("PUT", "/api/v1/surveys/<survey_id>/people/<account>"): Case(
        "change", "/api/v1/surveys/private/people/dave", json={"role": "analyst"}
    ),
    ("DELETE", "/api/v1/surveys/<survey_id>/people/<account>"): Case(
        "change", "/api/v1/surveys/private/people/dave"
    ),
    ("GET", "/api/v1/surveys/<survey_id>/audit.jsonl"): Case("change", f"{OBJECTS}/audit.jsonl"),
}


def api_routes(app: Flask) -> set[tuple[str, str]]:
    """Every (method, rule) the app routes under /api/v1."""
    return {
        (method, rule.rule)
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith("/api/v1/") or rule.rule == "/api/v1"
        for method in (rule.methods or set()) - IGNORED_METHODS
    }


class Matrix:
    """An app with accounts root (admin), alice (owns "objects", with reports, and the
    invite-only "private"), bob (analyst on both), carol (owns "carols") and dave (whom the
    people routes grant and revoke), and a token of each kind of principal."""

    def __init__(self, app: Flask):
        self.app = app
        self.tokens: dict[str, str] = {}
        with app.app_context():
            store = get_store()
            ids = {
                name: store.create_account(name, name == "root", NOW).id  # type: ignore[union-attr]
                for name in ("root", "alice", "bob", "carol", "dave")
            }
            self.ids = ids

            def token(name: str, label: str, **options: Any) -> str:
                text = credentials.new_token()
                store.add_token(credentials.digest(text), ids[name], label, NOW, **options)
                self.tokens[label] = text
                return text

            token("root", "admin")
            alice = access.authenticate(store, token("alice", "owner"), NOW)
            token("bob", "analyst")
            token("alice", "read_only", read_only=True)
            token("root", "scoped", surveys=["carols"])
            token("alice", "expired", expires_at="2025-12-31T23:59:59Z")
            revoked = token("alice", "revoked")
            assert store.revoke_token(credentials.digest(revoked)[:12], NOW) is not None
            carol = access.authenticate(store, token("carol", "carol"), NOW)
            create_survey(store, copy.deepcopy(DOC), who=alice)
            create_survey(
                store, {**copy.deepcopy(DOC), "id": "private", "enrollment": "invite"}, who=alice
            )
            create_survey(store, {**copy.deepcopy(DOC), "id": "carols"}, who=carol)
            wave = {**copy.deepcopy(DOC), "id": "objects-w1", "series": SERIES, "wave": 1}
            create_survey(store, wave, who=alice)
            for survey_id in (DOC["id"], "private", "objects-w1"):
                store.grant(survey_id, ids["bob"], "analyst", NOW)
        client = app.test_client()
        reports = [make_report(SURVEY, truth(i), generate_key()) for i in range(N)]
        response = client.post("/api/v1/reports", json={"reports": reports})
        assert all(r["result"] == "accepted" for r in response.get_json()["results"])

    def regrant_dave(self) -> None:
        """dave analyses "private" again (each DELETE case takes his role away)."""
        with self.app.app_context():
            get_store().grant("private", self.ids["dave"], "analyst", NOW)

    def client(self) -> FlaskClient:
        return self.app.test_client()

    def headers(self, principal: str) -> dict[str, str]:
        if principal == "none":
            return {}
        return {"Authorization": f"Bearer {self.tokens[principal]}"}


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Matrix]:
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path_factory.mktemp("roles") / "data"})
    yield Matrix(app)


def test_every_api_route_is_a_respondent_route_or_a_row_of_the_matrix(matrix: Matrix) -> None:
    routed = api_routes(matrix.app)
    assert RESPONDENT_ROUTES <= routed
    assert routed - RESPONDENT_ROUTES == set(ROUTES), "give a new route its row in ROUTES"


def call(matrix: Matrix, route: tuple[str, str], principal: str) -> Any:
    case = ROUTES[route]
    body = case.json
    if body == "new":  # a survey of its own for each principal: 201, or the refusal
        body = {**copy.deepcopy(DOC), "id": f"new-{principal.replace('_', '-')}"}
    client, headers = matrix.client(), matrix.headers(principal)
    if route[0] == "DELETE":
        matrix.regrant_dave()
    return client.open(case.path, method=route[0], json=body, headers=headers)


@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize("route", sorted(ROUTES), ids=lambda r: f"{r[0]} {r[1]}")
def test_the_matrix(matrix: Matrix, route: tuple[str, str], principal: str) -> None:
    expected = OUTCOMES[ROUTES[route].kind][principal]
    response = call(matrix, route, principal)
    text = response.get_data().decode("utf-8", "replace")  # .dta and .sav are binary
    if expected == "ok":
        assert 200 <= response.status_code < 300, text
        return
    assert response.status_code == expected, text
    assert response.content_type == "application/problem+json"
    detail = response.get_json()["detail"]
    if expected == 401:
        challenge = response.headers["WWW-Authenticate"]
        assert challenge.startswith('Bearer realm="deniable"')
        if principal == "none":
            assert "send Authorization: Bearer" in detail
        else:
            assert challenge.endswith('error="invalid_token"')
            state = "revoked" if principal == "revoked" else "expired"
            assert detail.startswith("the bearer token ") and f"is {state}" in detail
            assert matrix.tokens[principal] not in text
    elif expected == 404 and route[1].startswith("/api/v1/series/"):
        assert detail.startswith(f"no series {SERIES!r} on this aggregator"), detail
    elif expected == 404:  # word for word the answer for a survey that does not exist
        found = re.search(r"/api/v1/surveys/([^/?]+)", ROUTES[route].path)
        assert found is not None
        survey_id = found.group(1)
        assert detail == f"no survey {survey_id!r} on this aggregator; check the survey id"
    else:
        assert detail.startswith(FORBIDDEN_BECAUSE[principal]), detail


#: How a 403 begins: the standing, or what the token narrows.
FORBIDDEN_BECAUSE = {
    "analyst": "'bob' is analyst on survey",
    "read_only": "this token is read-only",
    "scoped": "this token is limited to some surveys",
}


def test_an_unseen_survey_is_404_before_any_parameter_is_read(matrix: Matrix) -> None:
    """A bad parameter or body does not tell a token that cannot see the survey that it exists."""
    client, headers = matrix.client(), matrix.headers("scoped")
    for response in (
        client.get(f"{OBJECTS}/results?confidence=7", headers=headers),
        client.get(f"{OBJECTS}/breakdown", headers=headers),
        client.get(f"{OBJECTS}/crosstab?first=x", headers=headers),
        client.post(f"{OBJECTS}/regression", json={"nope": 1}, headers=headers),
        client.post("/api/v1/surveys/private/invitations", json={"count": -1}, headers=headers),
    ):
        assert response.status_code == 404, response.get_data(as_text=True)
    analyst = matrix.headers("analyst")
    bad = client.post("/api/v1/surveys/private/invitations", json={"wrong": 1}, headers=analyst)
    assert bad.status_code == 403
    read_only = client.post("/api/v1/surveys", data="not json", headers=matrix.headers("read_only"))
    assert read_only.status_code == 403


def test_the_list_shows_each_token_what_it_may_see(matrix: Matrix) -> None:
    def listed(principal: str) -> set[str]:
        response = matrix.client().get("/api/v1/surveys", headers=matrix.headers(principal))
        assert response.status_code == 200
        return {s["id"] for s in response.get_json()["surveys"]}

    alices = {DOC["id"], "private"}
    assert alices <= listed("owner") and "carols" not in listed("owner")
    assert listed("read_only") == listed("owner")
    assert alices <= listed("analyst") and "carols" not in listed("analyst")
    assert {DOC["id"], "private", "carols"} <= listed("admin")
    assert listed("scoped") == {"carols"}


def test_an_owner_shares_a_survey_and_reads_its_audit_log(matrix: Matrix) -> None:
    client, owner, carol = matrix.client(), matrix.headers("owner"), matrix.headers("carol")
    people = f"{OBJECTS}/people"
    assert client.get(f"{OBJECTS}/results", headers=carol).status_code == 404
    given = client.put(f"{people}/carol", json={"role": "analyst"}, headers=owner)
    assert given.status_code == 200 and given.get_json()["role"] == "analyst"
    listed = client.get(people, headers=owner).get_json()["people"]
    assert {(p["account"], p["role"]) for p in listed} >= {("alice", "owner"), ("carol", "analyst")}
    assert client.get(f"{OBJECTS}/results", headers=carol).status_code == 200
    assert client.post(f"{OBJECTS}/close", headers=carol).status_code == 403
    for bad in ({"role": "admin"}, {"role": 1}, {"role": "owner", "x": 1}):
        assert client.put(f"{people}/carol", json=bad, headers=owner).status_code == 422
    assert (
        client.put(f"{people}/nobody", json={"role": "analyst"}, headers=owner).status_code == 404
    )
    assert client.delete(f"{people}/carol", headers=owner).status_code == 204
    assert client.get(f"{OBJECTS}/results", headers=carol).status_code == 404
    assert client.delete(f"{people}/alice", headers=owner).status_code == 409  # the last owner
    log = client.get(f"{OBJECTS}/audit.jsonl", headers=owner)
    assert log.status_code == 200 and log.mimetype == "application/x-ndjson"
    entries = [json.loads(line) for line in log.get_data(as_text=True).splitlines()]
    alice = credentials.digest(matrix.tokens["owner"])[:12]
    carols = credentials.digest(matrix.tokens["carol"])[:12]
    assert {"grant", "revoke", "results"} <= {e["action"] for e in entries}
    assert all(e["survey"] == DOC["id"] for e in entries)
    grants = [e for e in entries if e["action"] in ("grant", "revoke")]
    assert [(e["action"], e["account"], e["token_id"], e["params"]) for e in grants][-2:] == [
        ("grant", "alice", alice, {"account": "carol", "role": "analyst"}),
        ("revoke", "alice", alice, {"account": "carol", "role": "analyst"}),
    ]
    assert [e["action"] for e in entries if e["token_id"] == carols] == ["results"]
    text = log.get_data(as_text=True)
    assert not any(token in text for token in matrix.tokens.values())
    since = client.get(f"{OBJECTS}/audit.jsonl?since=2999-01-01", headers=owner)
    assert since.status_code == 200 and since.get_data(as_text=True) == ""
    assert client.get(f"{OBJECTS}/audit.jsonl?since=yesterday", headers=owner).status_code == 400
