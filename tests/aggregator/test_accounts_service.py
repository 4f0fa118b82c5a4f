"""The account, token and grant service functions (aggregator/accounts.py) on a real store:
who may call them, what they refuse and how, and what each leaves on the audit log."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from deniable.aggregator import accounts, surveys
from deniable.aggregator.access import OPERATOR, Principal, authenticate
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.store import Store

NOW = datetime(2025, 1, 31, 9, 30, tzinfo=UTC)


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def refused(kind: str, call: Any, *args: Any, **kwargs: Any) -> str:
    """Call and expect an ActionError of this kind; its message."""
    with pytest.raises(ActionError) as caught:
        result = call(*args, **kwargs)
        if hasattr(result, "__next__"):
            list(result)
    assert caught.value.kind == kind, str(caught.value)
    return str(caught.value)


def login(store: Store, account: str, **options: Any) -> tuple[str, Principal]:
    """A new token of the account (made by the operator) and the principal it speaks for."""
    token, _ = accounts.create_token(store, OPERATOR, account, **options)
    return token, authenticate(store, token, now_text())


def log(store: Store, **filters: Any) -> list[dict[str, Any]]:
    """The whole audit log (read straight from the store: reading it here is not logged)."""
    return [entry.to_dict() for entry in store.iter_audit(**filters)]


@pytest.fixture
def team(store: Store, survey_doc: dict[str, Any]) -> dict[str, Principal]:
    """Survey "habits" owned by alice, with bob its analyst and carol without a role."""
    for name in ("alice", "bob", "carol"):
        accounts.create_account(store, OPERATOR, name)
    surveys.create_survey(store, survey_doc, who=OPERATOR)
    accounts.grant(store, OPERATOR, "habits", "alice", "owner")
    accounts.grant(store, OPERATOR, "habits", "bob", "analyst")
    return {name: login(store, name)[1] for name in ("alice", "bob", "carol")}


# durations and times


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", "2025-03-02T09:30:00Z"),
        ("12h", "2025-01-31T21:30:00Z"),
        ("90m", "2025-01-31T11:00:00Z"),
        ("45s", "2025-01-31T09:30:45Z"),
        (" 2D ", "2025-02-02T09:30:00Z"),
        ("3650d", "2035-01-29T09:30:00Z"),
    ],
)
def test_parse_expiry_adds_the_duration(text, expected):
    assert accounts.parse_expiry(text, NOW) == expected


@pytest.mark.parametrize(
    "text", ["", "30", "d", "1w", "1.5h", "-1d", "0s", "3651d", "87601h", "9" * 9 + "d", "9" * 400]
)
def test_parse_expiry_refuses_anything_else(text):
    message = refused("bad-parameter", accounts.parse_expiry, text, NOW)
    assert message.startswith("expires: expected a duration")
    assert len(message) < 200


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-01-31", "2025-01-31T00:00:00Z"),
        ("2025-01-31T09:30:00Z", "2025-01-31T09:30:00Z"),
        ("2025-01-31T09:30:00", "2025-01-31T09:30:00Z"),
    ],
)
def test_parse_since_normalizes(text, expected):
    assert accounts.parse_since(text) == expected


@pytest.mark.parametrize(
    "text", ["", "yesterday", "2025-02-30", "2025-01-31T24:00:00Z", "2025-1-31", "2" * 300]
)
def test_parse_since_refuses_anything_else(text):
    assert refused("bad-parameter", accounts.parse_since, text).startswith("since: expected")


# accounts


def test_create_account_is_for_admins_and_is_logged(store):
    made = accounts.create_account(store, OPERATOR, "alice", admin=True)
    assert (made.name, made.admin) == ("alice", True)
    assert [a.name for a in accounts.list_accounts(store, OPERATOR)] == ["alice"]
    assert log(store)[0] == {
        "time": log(store)[0]["time"],
        "account": "operator",
        "token_id": None,
        "survey": None,
        "action": "account.create",
        "params": {"account": "alice", "admin": True},
    }
    accounts.create_account(store, OPERATOR, "bob")
    _, bob = login(store, "bob")
    refused("forbidden", accounts.create_account, store, bob, "mallory", admin=True)
    refused("forbidden", accounts.list_accounts, store, bob)
    _, admin_read_only = login(store, "alice", read_only=True)
    refused("forbidden", accounts.create_account, store, admin_read_only, "mallory")
    assert store.get_account("mallory") is None


@pytest.mark.parametrize("name", ["", "-x", ".x", "a b", "x" * 65, "é", "a/b", "a\nb", "operator"])
def test_create_account_refuses_a_bad_name(store, name):
    refused("invalid", accounts.create_account, store, OPERATOR, name)
    assert store.list_accounts() == []


def test_create_account_refuses_a_taken_name(store):
    accounts.create_account(store, OPERATOR, "team-a@example.org")
    message = refused("conflict", accounts.create_account, store, OPERATOR, "team-a@example.org")
    assert "exists" in message


# tokens


def test_create_token_speaks_for_its_account_with_its_narrowing(store, team):
    token, record = accounts.create_token(
        store, OPERATOR, "bob", read_only=True, surveys=["habits", "habits"], name="laptop"
    )
    who = authenticate(store, token, now_text())
    assert (who.account, who.token_id, who.admin, who.read_only) == ("bob", record.id, False, True)
    assert who.surveys == frozenset({"habits"})
    assert (record.name, record.surveys, record.expires_at) == ("laptop", ("habits",), None)
    entry = log(store)[-1]
    assert entry["action"] == "token.create"
    assert entry["params"] == {
        "account": "bob",
        "token_id": record.id,
        "name": "laptop",
        "read_only": True,
        "surveys": ["habits"],
    }


def test_create_token_expires(store):
    accounts.create_account(store, OPERATOR, "alice")
    token, record = accounts.create_token(store, OPERATOR, "alice", expires="1h")
    assert record.expires_at is not None and record.expires_at > now_text()
    assert authenticate(store, token, now_text()).account == "alice"
    later = "2999-01-01T00:00:00Z"
    assert "expired" in refused("unauthenticated", authenticate, store, token, later)
    assert log(store)[-1]["params"]["expires"] == record.expires_at


def test_create_token_refuses_unknown_accounts_surveys_and_bad_options(store, team):
    before = store.list_tokens()
    refused("not-found", accounts.create_token, store, OPERATOR, "nobody")
    refused("not-found", accounts.create_token, store, OPERATOR, "bob", surveys=["habits", "no"])
    refused("bad-parameter", accounts.create_token, store, OPERATOR, "bob", expires="forever")
    refused("invalid", accounts.create_token, store, OPERATOR, "bob", name=" ")
    refused("invalid", accounts.create_token, store, OPERATOR, "bob", name="x" * 65)
    refused("forbidden", accounts.create_token, store, team["alice"], "alice")
    assert store.list_tokens() == before


def test_list_tokens_is_for_admins(store, team):
    ids = [t.id for t in accounts.list_tokens(store, OPERATOR)]
    assert len(ids) == 3
    assert [t.account for t in accounts.list_tokens(store, OPERATOR, "bob")] == ["bob"]
    refused("not-found", accounts.list_tokens, store, OPERATOR, "nobody")
    refused("forbidden", accounts.list_tokens, store, team["alice"])


@pytest.mark.parametrize("by", ["id", "token"])
def test_revoke_token_refuses_it_from_then_on(store, by):
    accounts.create_account(store, OPERATOR, "alice")
    token, record = accounts.create_token(store, OPERATOR, "alice")
    revoked = accounts.revoke_token(store, OPERATOR, record.id if by == "id" else token)
    assert revoked.id == record.id and revoked.revoked_at is not None
    assert "revoked" in refused("unauthenticated", authenticate, store, token, now_text())
    again = accounts.revoke_token(store, OPERATOR, record.id)
    assert again.revoked_at == revoked.revoked_at  # the first revocation's time stays
    entry = log(store)[-1]
    assert entry["action"] == "token.revoke"
    assert entry["params"] == {"account": "alice", "token_id": record.id}


@pytest.mark.parametrize("text", ["0123456789ab", "not-a-token", "", "x" * 10_000])
def test_revoke_token_of_no_token_is_not_found(store, text):
    assert "no such token" in refused("not-found", accounts.revoke_token, store, OPERATOR, text)


def test_only_admins_revoke_tokens(store, team):
    victim = accounts.list_tokens(store, OPERATOR, "bob")[0]
    refused("forbidden", accounts.revoke_token, store, team["alice"], victim.id)
    assert store.list_tokens(victim.account_id)[0].revoked_at is None


# roles


def test_an_owner_grants_and_revokes(store, team):
    alice = team["alice"]
    given = accounts.grant(store, alice, "habits", "carol", "analyst")
    assert (given.survey_id, given.account, given.role) == ("habits", "carol", "analyst")
    carol = team["carol"]
    assert surveys.results(store, "habits", who=carol).n == 0  # she sees it now
    roles = {g.account: g.role for g in accounts.people(store, alice, "habits")}
    assert roles == {"alice": "owner", "bob": "analyst", "carol": "analyst"}
    accounts.revoke(store, alice, "habits", "carol")
    refused("not-found", surveys.results, store, "habits", who=carol)
    entries = [(e["account"], e["token_id"], e["action"], e["params"]) for e in log(store)]
    assert ("alice", alice.token_id, "grant", {"account": "carol", "role": "analyst"}) in entries
    assert ("alice", alice.token_id, "revoke", {"account": "carol", "role": "analyst"}) in entries
    assert all(e["survey"] == "habits" for e in log(store) if e["action"] in ("grant", "revoke"))


def test_analysts_strangers_and_read_only_tokens_may_not_grant(store, team):
    assert "needs owner" in refused(
        "forbidden", accounts.grant, store, team["bob"], "habits", "carol", "analyst"
    )
    refused("forbidden", accounts.people, store, team["bob"], "habits")
    refused("not-found", accounts.grant, store, team["carol"], "habits", "carol", "owner")
    refused("not-found", accounts.revoke, store, team["carol"], "habits", "bob")
    _, read_only = login(store, "alice", read_only=True)
    refused("forbidden", accounts.grant, store, read_only, "habits", "carol", "analyst")
    assert store.roles_of(store.get_account("carol").id) == {}


def test_grant_refuses_a_bad_role_or_account(store, team):
    refused("invalid", accounts.grant, store, OPERATOR, "habits", "carol", "admin")
    refused("not-found", accounts.grant, store, OPERATOR, "habits", "nobody", "owner")
    refused("not-found", accounts.grant, store, OPERATOR, "nowhere", "carol", "owner")
    refused("not-found", accounts.revoke, store, OPERATOR, "habits", "carol")  # no role


def test_the_last_owner_stays(store, team):
    message = refused("conflict", accounts.revoke, store, OPERATOR, "habits", "alice")
    assert "last owner" in message
    refused("conflict", accounts.grant, store, OPERATOR, "habits", "alice", "analyst")
    assert store.roles_of(store.get_account("alice").id) == {"habits": "owner"}
    accounts.grant(store, team["alice"], "habits", "bob", "owner")
    accounts.revoke(store, team["bob"], "habits", "alice")
    assert store.roles_of(store.get_account("alice").id) == {}


# the audit log


def test_reading_the_log_is_logged_first(store, team):
    entries = list(accounts.audit_entries(store, team["alice"], survey="habits"))
    assert entries[-1].action == "audit" and entries[-1].account == "alice"
    assert all(e.survey == "habits" for e in entries)
    whole = list(accounts.audit_entries(store, OPERATOR, since="2000-01-01"))
    assert whole[-1].to_dict()["params"] == {"since": "2000-01-01T00:00:00Z"}
    assert {e.action for e in whole} >= {"account.create", "token.create", "grant", "audit"}
    assert list(accounts.audit_entries(store, OPERATOR, since="2999-01-01")) == []


def test_the_log_is_for_owners_and_admins(store, team):
    refused("forbidden", accounts.audit_entries, store, team["bob"], survey="habits")
    refused("not-found", accounts.audit_entries, store, team["carol"], survey="habits")
    refused("forbidden", accounts.audit_entries, store, team["alice"])
    refused("bad-parameter", accounts.audit_entries, store, OPERATOR, since="last week")
    assert [e["action"] for e in log(store)].count("audit") == 0  # refusals read nothing


def test_the_log_never_holds_a_token(store, team):
    tokens = [accounts.create_token(store, OPERATOR, n)[0] for n in ("alice", "bob", "carol")]
    tokens.append(login(store, "alice", expires="1d")[0])
    accounts.revoke_token(store, OPERATOR, tokens[0])
    accounts.grant(store, team["alice"], "habits", "carol", "analyst")
    text = json.dumps(log(store))
    assert all(token not in text for token in tokens)
