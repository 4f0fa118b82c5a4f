"""Two teams on one aggregator, over real HTTP (docs/accounts.md): each team's token sees its
own survey and nothing of the other's (404, as for a survey that does not exist), an admin sees
both, every action lands once on the audit log under its account and token id, no token text
is ever written down, and a revoked token is refused on its very next request."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import requests

from deniable.aggregator import accounts, credentials
from deniable.aggregator.access import OPERATOR
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.aggregator.test_results_objects import BREAKDOWN, CROSSTAB, DOC, FORMULA, truth

pytestmark = pytest.mark.own_server  # the teams' accounts, tokens and audit log are server-wide

N = 120
TEAMS = ("team-a", "team-b")


def survey_doc(team: str) -> dict[str, Any]:
    return {**copy.deepcopy(DOC), "id": f"{team}-survey", "title": f"{team}'s survey"}


def reads(survey_id: str) -> list[tuple[str, str, Any]]:
    """Every researcher read of a survey: (method, path, JSON body)."""
    base = f"/api/v1/surveys/{survey_id}"
    return [
        ("GET", f"{base}/results", None),
        ("GET", f"{base}/results.csv", None),
        ("GET", f"{base}/reports.jsonl", None),
        ("GET", f"{base}/breakdown?question={BREAKDOWN[0]}&by={BREAKDOWN[1]}", None),
        ("GET", f"{base}/crosstab?first={CROSSTAB[0]}&second={CROSSTAB[1]}", None),
        ("POST", f"{base}/regression", {"formula": FORMULA}),
    ]


#: The audit log's action of each read, in the order of `reads`.
READ_ACTIONS = ["results", "results.csv", "reports.jsonl", "breakdown", "crosstab", "regression"]


class Teams:
    """A live server with two accounts, each with a token and a survey of its own with reports."""

    def __init__(self, server: Any):
        self.server = server
        self.tokens: dict[str, str] = {}
        with server.store() as store:  # `account create` and `token create`, in process
            for team in TEAMS:
                accounts.create_account(store, OPERATOR, team)
                self.tokens[team], _ = accounts.create_token(store, OPERATOR, team)
        self.tokens["admin"] = server.token
        for team in TEAMS:
            created = self.call(team, "POST", "/api/v1/surveys", survey_doc(team))
            assert created.status_code == 201, created.text
            survey = Survey.from_dict(created.json()["survey"])
            reports = [make_report(survey, truth(i), generate_key()) for i in range(N)]
            posted = requests.post(
                f"{server.url}/api/v1/reports", json={"reports": reports}, timeout=60
            )
            assert all(r["result"] == "accepted" for r in posted.json()["results"]), posted.text

    def call(self, who: str, method: str, path: str, body: Any = None) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return requests.request(
            method, f"{self.server.url}{path}", json=body, headers=headers, timeout=60
        )

    def listed(self, who: str) -> list[str]:
        response = self.call(who, "GET", "/api/v1/surveys")
        assert response.status_code == 200, response.text
        return [s["id"] for s in response.json()["surveys"]]

    def audit(self) -> list[dict[str, Any]]:
        text = self.server.cli("audit", "--json").stdout
        return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def teams(live_server: Any) -> Teams:
    return Teams(live_server)


def test_each_team_sees_only_its_own_survey_and_an_admin_sees_both(teams: Teams) -> None:
    a, b = (survey_doc(team)["id"] for team in TEAMS)
    assert teams.listed("team-a") == [a]
    assert teams.listed("team-b") == [b]
    assert teams.listed("admin") == [a, b]
    for team, own, other in (("team-a", a, b), ("team-b", b, a)):
        for method, path, body in reads(own):
            assert teams.call(team, method, path, body).status_code == 200, path
        for method, path, body in [
            *reads(other),
            ("POST", f"/api/v1/surveys/{other}/close", None),
            ("POST", f"/api/v1/surveys/{other}/invitations", {"count": 1}),
        ]:
            response = teams.call(team, method, path, body)
            assert response.status_code == 404, (team, path, response.text)
            assert response.json()["detail"] == (
                f"no survey {other!r} on this aggregator; check the survey id"
            )
            nothing = teams.call(team, method, path.replace(other, "no-such-survey"), body)
            assert nothing.status_code == 404 and nothing.json()["detail"] == (
                "no survey 'no-such-survey' on this aggregator; check the survey id"
            )
    for survey_id in (a, b):
        for method, path, body in reads(survey_id):
            assert teams.call("admin", method, path, body).status_code == 200, path
    # Respondent routes stay public: anyone reads either survey's document.
    for survey_id in (a, b):
        assert requests.get(f"{teams.server.url}/api/v1/surveys/{survey_id}", timeout=10).ok


def test_every_action_is_logged_once_under_its_account_and_token_id(teams: Teams) -> None:
    a = survey_doc("team-a")["id"]
    before = teams.audit()
    token_ids = {who: credentials.digest(token)[:12] for who, token in teams.tokens.items()}
    creates = [e for e in before if e["action"] == "create"]
    assert [(e["account"], e["token_id"], e["survey"]) for e in creates] == [
        ("team-a", token_ids["team-a"], a),
        ("team-b", token_ids["team-b"], survey_doc("team-b")["id"]),
    ]
    for method, path, body in reads(a):
        assert teams.call("team-a", method, path, body).status_code == 200
    refused = teams.call("team-b", "GET", f"/api/v1/surveys/{a}/results")
    assert refused.status_code == 404
    assert teams.call("team-a", "POST", f"/api/v1/surveys/{a}/close").status_code == 200
    # Reading the log is logged too (the operator's "audit"): the team's actions are the rest.
    new = [e for e in teams.audit()[len(before) :] if e["action"] != "audit"]
    assert [e["action"] for e in new] == [*READ_ACTIONS, "close"]  # the refusal is not an action
    for entry in new:
        assert set(entry) == {"time", "account", "token_id", "survey", "action", "params"}
        assert (entry["account"], entry["token_id"], entry["survey"]) == (
            "team-a",
            token_ids["team-a"],
            a,
        )
    by_action = {e["action"]: e["params"] for e in new}
    assert by_action["regression"]["formula"] == FORMULA
    assert (by_action["breakdown"]["question"], by_action["breakdown"]["by"]) == BREAKDOWN
    assert by_action["results"]["confidence"] == 0.95


@pytest.mark.parametrize("backend", ["sqlite"])  # reads the SQLite file
def test_no_token_is_ever_written_down(teams: Teams) -> None:
    for who in TEAMS:
        for method, path, body in reads(survey_doc(who)["id"]):
            assert teams.call(who, method, path, body).status_code == 200
    audit_text = teams.server.cli("audit", "--json").stdout + teams.server.cli("audit").stdout
    assert audit_text.count("\n") >= 2 * len(READ_ACTIONS)
    files = [p for p in Path(teams.server.data_dir).rglob("*") if p.is_file()]
    assert any(p.suffix in (".sqlite", ".sqlite3", ".db") for p in files), files
    stored = b"".join(p.read_bytes() for p in files)
    for token in teams.tokens.values():
        assert token not in audit_text
        assert token.encode() not in stored
        assert credentials.digest(token).encode() in stored  # the hash is what is kept


def test_a_revoked_token_is_refused_on_its_next_request(teams: Teams) -> None:
    survey_id = survey_doc("team-b")["id"]
    assert teams.call("team-b", "GET", f"/api/v1/surveys/{survey_id}/results").status_code == 200
    token_id = credentials.digest(teams.tokens["team-b"])[:12]
    teams.server.cli("token", "revoke", token_id)
    for method, path in (
        ("GET", f"/api/v1/surveys/{survey_id}/results"),
        ("GET", "/api/v1/surveys"),
    ):
        response = teams.call("team-b", method, path)
        assert response.status_code == 401, response.text
        assert response.headers["WWW-Authenticate"] == (
            'Bearer realm="deniable", error="invalid_token"'
        )
        assert f"the bearer token {token_id} is revoked" in response.json()["detail"]
    # The other team is untouched.
    assert teams.listed("team-a") == [survey_doc("team-a")["id"]]
