"""`deniable-aggregator account | token | grant | revoke | audit`: through Flask's CLI runner,
and as real processes beside a real server (a token revoked at the command line is refused on
its next HTTP request)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import requests

from deniable.aggregator import credentials
from deniable.aggregator.cli import accounts as accounts_cli
from deniable.aggregator.cli.core import cli
from deniable.aggregator.store import AuditEntry
from tests.aggregator.conftest import TOKEN
from tests.conftest import LiveServer
from tests.postgres_support import SQLITE_ONLY

#: What `token create` prints: the token, alone (secrets.token_urlsafe(32)).
TOKEN_LINE = re.compile(r"[A-Za-z0-9_-]{43}\n")
AUDIT_KEYS = ["time", "account", "token_id", "survey", "action", "params"]


def invoke(runner: Any, *args: str) -> Any:
    return runner.invoke(cli, list(args))


def ok(runner: Any, *args: str) -> str:
    result = invoke(runner, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def fails(runner: Any, *args: str, code: int = 1) -> str:
    """Run a command that must fail with this exit code; its stderr, one line for code 1."""
    result = invoke(runner, *args)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    if code == 1:
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    return result.stderr


@pytest.fixture
def habits(runner: Any, tmp_path: Any, survey_doc: dict[str, Any]) -> str:
    path = tmp_path / "habits.json"
    path.write_text(json.dumps(survey_doc))
    return ok(runner, "create-survey", str(path)).strip()


def test_accounts_are_created_and_listed(runner):
    assert ok(runner, "account", "create", "alice") == "created account 'alice'\n"
    assert ok(runner, "account", "create", "root", "--admin") == "created account 'root' (admin)\n"
    listed = json.loads(ok(runner, "account", "list", "--json"))
    assert [(a["name"], a["admin"]) for a in listed] == [
        ("alice", False),
        ("root", True),
        ("tests", True),
    ]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", a["created"]) for a in listed)
    table = ok(runner, "account", "list").splitlines()
    assert table[0].split() == ["NAME", "ADMIN", "CREATED"]
    assert table[1].split()[:2] == ["alice", "-"] and table[2].split()[:2] == ["root", "admin"]
    assert "exists" in fails(runner, "account", "create", "alice")
    assert "account name" in fails(runner, "account", "create", "no spaces")
    assert "account name" in fails(runner, "account", "create", "operator")
    fails(runner, "account", "create", code=2)
    fails(runner, "account", "frobnicate", code=2)


def test_tokens_are_created_listed_and_revoked(runner, client, habits):
    ok(runner, "account", "create", "alice")
    ok(runner, "grant", habits, "alice", "--role", "owner")
    token = ok(runner, "token", "create", "alice")
    assert TOKEN_LINE.fullmatch(token)
    narrow = ok(
        runner, "token", "create", "alice", "--read-only", "--survey", habits,
        "--expires", "12h", "--name", "laptop",
    ).strip()  # fmt: skip
    listed = json.loads(ok(runner, "token", "list", "--json", "--account", "alice"))
    assert [set(t) for t in listed] == [
        {"id", "account", "name", "created", "expires", "read_only", "surveys", "revoked"}
    ] * 2
    first, second = sorted(listed, key=lambda t: t["name"])  # made within the same second
    assert (first["name"], first["expires"], first["read_only"], first["surveys"]) == (
        "alice", None, False, None,
    )  # fmt: skip
    assert (second["name"], second["read_only"], second["surveys"]) == ("laptop", True, [habits])
    assert second["expires"] > first["created"]
    everything = ok(runner, "token", "list") + ok(runner, "token", "list", "--json")
    assert token.strip() not in everything and narrow not in everything

    as_narrow = {"Authorization": f"Bearer {narrow}"}
    assert client.get(f"/api/v1/surveys/{habits}/results", headers=as_narrow).status_code == 200
    assert client.post(f"/api/v1/surveys/{habits}/close", headers=as_narrow).status_code == 403

    revoked = ok(runner, "token", "revoke", second["id"])
    assert revoked.startswith(f"revoked token {second['id']} of 'alice'")
    assert client.get(f"/api/v1/surveys/{habits}/results", headers=as_narrow).status_code == 401
    ok(runner, "token", "revoke", token.strip())  # by the token itself
    as_alice = {"Authorization": f"Bearer {token.strip()}"}
    assert client.get("/api/v1/surveys", headers=as_alice).status_code == 401
    rows = [line.split() for line in ok(runner, "token", "list").splitlines()[1:]]
    states = sorted((row[1], row[-2] if row[-2] == "revoked" else row[-1]) for row in rows)
    assert states == [("alice", "revoked"), ("alice", "revoked"), ("tests", "live")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["token", "create", "nobody"], "no account 'nobody'"),
        (["token", "create", "tests", "--survey", "nowhere"], "no survey 'nowhere'"),
        (["token", "create", "tests", "--expires", "soon"], "expires: expected a duration"),
        (["token", "create", "tests", "--expires", "9999d"], "expires: expected a duration"),
        (["token", "list", "--account", "nobody"], "no account 'nobody'"),
        (["token", "revoke", "0123456789ab"], "no such token"),
        (["token", "revoke", "not-a-token"], "no such token"),
        (["grant", "nowhere", "tests", "--role", "owner"], "no survey 'nowhere'"),
        (["grant", "habits", "nobody", "--role", "owner"], "no account 'nobody'"),
        (["revoke", "habits", "tests"], "has no role"),
        (["audit", "--since", "last week"], "since: expected a date"),
        (["audit", "--survey", "nowhere"], "no survey 'nowhere'"),
        (["revoke-token", "nobody"], "no token named 'nobody'"),
    ],
)
def test_refusals_are_one_line_and_exit_1(runner, habits, args, message):
    assert message in fails(runner, *args)


@pytest.mark.parametrize(
    "args",
    [
        ["grant", "habits", "tests", "--role", "admin"],
        ["grant", "habits", "tests"],
        ["token", "create"],
        ["token", "list", "--bogus"],
    ],
)
def test_usage_errors_exit_2(runner, habits, args):
    fails(runner, *args, code=2)


def test_create_token_refuses_a_name_that_is_not_an_admin(runner):
    ok(runner, "account", "create", "alice")
    assert "not an admin" in fails(runner, "create-token", "--name", "alice")


def test_grants_and_the_last_owner(runner, client, habits):
    for name in ("alice", "bob"):
        ok(runner, "account", "create", name)
    assert ok(runner, "grant", habits, "alice", "--role", "owner") == (
        f"'alice' is owner on survey '{habits}'\n"
    )
    ok(runner, "grant", habits, "bob", "--role", "analyst")
    bob = {"Authorization": f"Bearer {ok(runner, 'token', 'create', 'bob').strip()}"}
    assert client.get(f"/api/v1/surveys/{habits}/results", headers=bob).status_code == 200
    assert "last owner" in fails(runner, "revoke", habits, "alice")
    assert (
        ok(runner, "revoke", habits, "bob") == f"'bob' has no role on survey '{habits}' any more\n"
    )
    assert client.get(f"/api/v1/surveys/{habits}/results", headers=bob).status_code == 404


def test_the_audit_log_as_jsonl_and_as_a_table(runner, client, habits):
    ok(runner, "account", "create", "alice")
    ok(runner, "grant", habits, "alice", "--role", "owner")
    token = ok(runner, "token", "create", "alice").strip()
    assert client.get(
        f"/api/v1/surveys/{habits}/results", headers={"Authorization": f"Bearer {token}"}
    ).status_code == 200  # fmt: skip
    lines = ok(runner, "audit", "--json").splitlines()
    entries = [json.loads(line) for line in lines]
    assert all(list(e) == AUDIT_KEYS for e in entries)
    actions = [(e["account"], e["action"], e["survey"]) for e in entries]
    assert actions[-4:] == [
        ("operator", "grant", habits),
        ("operator", "token.create", None),
        ("alice", "results", habits),
        ("operator", "audit", None),  # reading the log is logged, and read with it
    ]
    token_id = entries[-3]["params"]["token_id"]
    assert entries[-2]["token_id"] == token_id == credentials.digest(token)[:12]
    of_survey = [
        json.loads(x) for x in ok(runner, "audit", "--survey", habits, "--json").split("\n") if x
    ]
    assert {e["survey"] for e in of_survey} == {habits}
    assert of_survey[-1]["action"] == "audit"
    assert ok(runner, "audit", "--since", "2999-01-01", "--json") == ""
    table = ok(runner, "audit").splitlines()
    assert table[0].split() == ["TIME", "ACCOUNT", "TOKEN", "SURVEY", "ACTION", "PARAMS"]
    assert any(row.split()[1:5] == ["alice", token_id, habits, "results"] for row in table)
    everything = "\n".join([*lines, *table, ok(runner, "audit", "--json")])
    assert token not in everything and TOKEN not in everything


# PostgreSQL: test_accounts_store/service.py
@SQLITE_ONLY
@pytest.mark.own_server  # it makes accounts and tokens
def test_the_whole_flow_as_real_processes_beside_a_real_server(
    live_server: LiveServer, survey_doc: dict[str, Any]
):
    def cli_out(*args: str) -> str:
        return live_server.cli(*args).stdout

    def get(path: str, token: str) -> requests.Response:
        auth = {"Authorization": f"Bearer {token}"}
        return requests.get(f"{live_server.url}{path}", headers=auth, timeout=10)

    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", live_server.token)  # create-token: alone
    assert cli_out("account", "create", "alice") == "created account 'alice'\n"
    assert cli_out("account", "create", "bob") == "created account 'bob'\n"
    alice = cli_out("token", "create", "alice")
    assert TOKEN_LINE.fullmatch(alice)
    alice = alice.strip()
    made = requests.post(
        f"{live_server.url}/api/v1/surveys",
        json=survey_doc,
        headers={"Authorization": f"Bearer {alice}"},
        timeout=10,
    )
    assert made.status_code == 201, made.text  # alice owns what she creates
    bob = cli_out("token", "create", "bob", "--read-only").strip()
    assert get("/api/v1/surveys/habits/results", bob).status_code == 404
    cli_out("grant", "habits", "bob", "--role", "analyst")
    assert get("/api/v1/surveys/habits/results", bob).status_code == 200

    listed = json.loads(cli_out("token", "list", "--json"))
    bob_id = next(t["id"] for t in listed if t["account"] == "bob")
    assert cli_out("token", "revoke", bob_id).startswith(f"revoked token {bob_id}")
    refused = get("/api/v1/surveys/habits/results", bob)  # the very next request
    assert refused.status_code == 401 and "revoked" in refused.text
    assert get("/api/v1/surveys/habits/results", alice).status_code == 200

    log = cli_out("audit", "--json")
    entries = [json.loads(line) for line in log.splitlines()]
    assert all(list(e) == AUDIT_KEYS for e in entries)
    done = [(e["account"], e["action"]) for e in entries]
    for step in [("alice", "create"), ("operator", "grant"), ("bob", "results")]:
        assert step in done
    assert ("operator", "token.revoke") in done and ("alice", "results") in done
    revoke = next(e for e in entries if e["action"] == "token.revoke")
    assert revoke["params"] == {"account": "bob", "token_id": bob_id}
    for token in (live_server.token, alice, bob):
        assert token not in log
        assert token not in json.dumps(listed)
    failed = live_server.cli("token", "revoke", "nope", check=False)
    assert (failed.returncode, failed.stdout) == (1, "")
    assert failed.stderr.startswith("error: no such token") and failed.stderr.count("\n") == 1


def test_the_audit_table_shows_terminal_controls_as_escapes(runner, client, tmp_path, survey_doc):
    """A survey title and parameters are researchers' words: bidi overrides (U+202E), C1 controls
    (U+009B starts an escape sequence) and escape sequences reach the table as visible escapes."""
    hostile = dict(survey_doc, id="hostile-title", title="Tit\u202ele \u2066x\u2069")
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile), encoding="utf-8")
    ok(runner, "create-survey", str(path))
    entry = AuditEntry(
        "2026-11-28T00:00:00Z", "alice", None, "hostile-title", "results", {"by": "a\x9b2J\x1b[2Jb"}
    )
    row = accounts_cli.audit_row(accounts_cli._audit_cells(entry))
    assert "\\u009b2J\\u001b[2J" in row and "\x9b" not in row and "\x1b" not in row
    table = ok(runner, "audit")
    assert "Tit\\u202ele \\u2066x\\u2069" in table
    assert not any(ch in table for ch in "\u202e\u2066\u2069\x9b\x1b")
    created = [json.loads(x) for x in ok(runner, "audit", "--json").splitlines()]
    assert {"title": "Tit\u202ele \u2066x\u2069"} in [e["params"] for e in created]
