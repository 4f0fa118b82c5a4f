"""The one rule (aggregator/access.py) over a real store, on SQLite and PostgreSQL: who a token
speaks for, each standing's actions, the refusals' kinds and words, what a principal sees."""

from __future__ import annotations

import copy
from typing import Any, get_args

import pytest

from deniable.aggregator import access, credentials
from deniable.aggregator.access import OPERATOR, Principal
from deniable.aggregator.refusals import ActionError, not_found
from deniable.aggregator.store import Store
from deniable.aggregator.surveys import create_survey
from tests.aggregator.conftest import SURVEY_DOC

NOW = "2026-06-01T12:00:00Z"
EVERY_ACTION: tuple[access.Action, ...] = get_args(access.Action)


def doc(survey_id: str) -> dict[str, Any]:
    return {**copy.deepcopy(SURVEY_DOC), "id": survey_id}


class World:
    """Accounts root (admin), alice (owns "a"), bob (analyst on "a") and carol (owns "c"),
    and a token maker."""

    def __init__(self, store: Store):
        self.store = store
        self.accounts = {
            name: store.create_account(name, name == "root", NOW)
            for name in ("root", "alice", "bob", "carol")
        }
        self.alice = self.principal("alice")
        create_survey(store, doc("a"), who=self.alice)
        create_survey(store, doc("c"), who=self.principal("carol"))
        store.grant("a", self.id("bob"), "analyst", NOW)

    def id(self, name: str) -> int:
        account = self.accounts[name]
        assert account is not None
        return account.id

    def token(self, name: str, **options: Any) -> str:
        """A new token of the account, stored; the token text."""
        text = credentials.new_token()
        self.store.add_token(credentials.digest(text), self.id(name), "t", NOW, **options)
        return text

    def principal(self, name: str, **options: Any) -> Principal:
        return access.authenticate(self.store, self.token(name, **options), NOW)


@pytest.fixture
def world(store: Store) -> World:
    return World(store)


def refusal(call: Any) -> ActionError:
    with pytest.raises(ActionError) as refused:
        call()
    return refused.value


# -- authenticate -------------------------------------------------------------------------------


def test_a_live_token_speaks_for_its_account_and_names_itself_by_id(world: World) -> None:
    text = world.token("alice", read_only=True, surveys=["a"])
    who = access.authenticate(world.store, text, NOW)
    assert who == Principal(
        "alice", world.id("alice"), credentials.digest(text)[:12], False, True, frozenset({"a"})
    )
    root = access.authenticate(world.store, world.token("root"), NOW)
    assert root.admin and not root.read_only and root.surveys is None


def test_an_unknown_revoked_or_expired_token_is_unauthenticated(world: World) -> None:
    unknown = refusal(lambda: access.authenticate(world.store, "no-such-token", NOW))
    assert unknown.kind == "unauthenticated" and "not valid here" in str(unknown)
    revoked = world.token("alice")
    token_id = credentials.digest(revoked)[:12]
    assert world.store.revoke_token(token_id, NOW) is not None
    said = refusal(lambda: access.authenticate(world.store, revoked, NOW))
    assert said.kind == "unauthenticated" and str(said).startswith(f"the bearer token {token_id}")
    assert "is revoked" in str(said) and revoked not in str(said)
    expiring = world.token("alice", expires_at="2026-06-01T12:00:01Z")
    assert access.authenticate(world.store, expiring, NOW).account == "alice"
    expired = refusal(lambda: access.authenticate(world.store, expiring, "2026-06-01T12:00:01Z"))
    assert expired.kind == "unauthenticated" and "is expired" in str(expired)


# -- role_on and may ----------------------------------------------------------------------------


def test_role_on_is_the_standing_on_each_survey(world: World) -> None:
    store, bob = world.store, world.principal("bob")
    assert access.role_on(store, world.alice, "a") == "owner"
    assert access.role_on(store, bob, "a") == "analyst"
    assert access.role_on(store, bob, "c") is None
    assert access.role_on(store, world.principal("root"), "c") == "admin"
    assert access.role_on(store, OPERATOR, "a") == "admin"
    # A token limited to some surveys sees nothing else, whatever its account may.
    assert access.role_on(store, world.principal("root", surveys=["a"]), "c") is None
    assert access.role_on(store, world.principal("alice", surveys=["c"]), "a") is None
    assert access.role_on(store, world.principal("alice", surveys=["a"]), "a") == "owner"


@pytest.mark.parametrize("action", EVERY_ACTION)
def test_may_is_the_table_of_docs_accounts(action: access.Action) -> None:
    full = Principal("x", 1, "id", admin=False)
    read_only = Principal("x", 1, "id", admin=False, read_only=True)
    reads = action in ("view", "results", "analyze", "export")
    assert access.may(full, "admin", action) is True
    assert access.may(full, "owner", action) is True
    assert access.may(full, "analyst", action) is reads
    assert access.may(full, None, action) is False
    assert access.may(read_only, "admin", action) is reads
    assert access.may(read_only, "owner", action) is reads
    assert access.may(read_only, "analyst", action) is reads


# -- authorize ----------------------------------------------------------------------------------


def test_a_survey_out_of_sight_is_refused_as_one_that_does_not_exist(world: World) -> None:
    store, bob = world.store, world.principal("bob")
    for who, survey_id in (
        (bob, "c"),
        (world.alice, "c"),
        (world.principal("carol"), "a"),
        (world.principal("root", surveys=["c"]), "a"),
        (Principal("ghost", None, None, admin=False), "a"),
    ):
        for action in EVERY_ACTION:
            said = refusal(lambda: access.authorize(store, who, survey_id, action))  # noqa: B023
            assert said.kind == "not-found" and str(said) == str(not_found(survey_id))
    missing = refusal(lambda: access.authorize(store, OPERATOR, "nope", "view"))
    assert missing.kind == "not-found" and str(missing) == str(not_found("nope"))


def test_a_seen_survey_and_a_forbidden_action_says_why_and_whom_to_ask(world: World) -> None:
    store, bob = world.store, world.principal("bob")
    for action in ("invite", "close", "grant", "audit"):
        said = refusal(lambda: access.authorize(store, bob, "a", action))  # noqa: B023
        assert said.kind == "forbidden"
        assert str(said) == (
            f"'bob' is analyst on survey 'a'; {action} needs owner; "
            "ask an owner of the survey or an admin"
        )
    read_only = world.principal("alice", read_only=True)
    said = refusal(lambda: access.authorize(store, read_only, "a", "close"))
    assert said.kind == "forbidden" and str(said).startswith("this token is read-only;")
    # What each may do comes back as the survey's record.
    assert access.authorize(store, bob, "a", "results").id == "a"
    assert access.authorize(store, read_only, "a", "export").id == "a"
    assert access.authorize(store, world.alice, "a", "grant").id == "a"
    assert access.authorize(store, world.principal("root", read_only=True), "c", "view").id == "c"


# -- visible_surveys, require_creator, require_admin --------------------------------------------


def test_visible_surveys_are_those_with_a_standing(world: World) -> None:
    def ids(who: Principal) -> list[str]:
        return [r.id for r in access.visible_surveys(world.store, who)]

    assert ids(world.principal("root")) == ids(OPERATOR) == ["a", "c"]
    assert ids(world.alice) == ids(world.principal("bob")) == ["a"]
    assert ids(world.principal("carol")) == ["c"]
    assert ids(world.principal("root", surveys=["c"])) == ["c"]
    assert ids(world.principal("alice", surveys=["c"])) == []
    assert ids(Principal("ghost", None, None, admin=False)) == []


def test_only_a_full_token_creates_surveys_and_only_an_admins_manages(world: World) -> None:
    for who in (world.alice, world.principal("bob"), world.principal("root"), OPERATOR):
        access.require_creator(who)
    read_only = refusal(lambda: access.require_creator(world.principal("alice", read_only=True)))
    assert read_only.kind == "forbidden" and "read-only" in str(read_only)
    scoped = refusal(lambda: access.require_creator(world.principal("alice", surveys=["a"])))
    assert scoped.kind == "forbidden" and "limited to some surveys" in str(scoped)
    for who in (world.principal("root"), OPERATOR):
        access.require_admin(who)
    for who in (
        world.alice,
        world.principal("root", read_only=True),
        world.principal("root", surveys=["a"]),
    ):
        said = refusal(lambda: access.require_admin(who))  # noqa: B023
        assert said.kind == "forbidden" and str(said) == (
            "managing accounts and tokens needs an admin account's full token"
        )
