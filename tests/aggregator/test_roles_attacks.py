"""What an attack on accounts and roles found, each kept from coming back (on both stores):
two owners removing each other at once, a NUL in an account name, the create route as an
oracle of invisible surveys, an account named like the operator."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from deniable.aggregator import access, accounts, credentials
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.store import LastOwnerError, Store
from deniable.aggregator.store.sqlite import SQLiteStore
from deniable.aggregator.surveys import create_survey
from tests.aggregator.conftest import SURVEY_DOC

NOW = "2026-01-01T00:00:00Z"


@pytest.fixture
def second_store(tmp_path: Any, database_url: str | None) -> Iterator[Callable[[], Store]]:
    """Opens another store on the same database as `store` (another connection)."""
    opened: list[Store] = []

    def open_one() -> Store:
        if database_url is None:
            found: Store = SQLiteStore.in_data_dir(tmp_path / "store")
        else:
            from deniable.aggregator.store.postgres import PostgresStore

            found = PostgresStore(database_url)
        opened.append(found)
        return found

    yield open_one
    for found in opened:
        found.close()


def principal(store: Store, name: str, *, admin: bool = False) -> access.Principal:
    account = store.create_account(name, admin, NOW)
    assert account is not None
    token = credentials.new_token()
    store.add_token(credentials.digest(token), account.id, name, NOW)
    return access.authenticate(store, token, NOW)


def test_two_owners_removing_each_other_at_once_leave_one(store: Store, second_store) -> None:
    alice = principal(store, "alice")
    dave = store.create_account("dave", False, NOW)
    assert dave is not None
    create_survey(store, copy.deepcopy(SURVEY_DOC), who=alice)
    survey_id = SURVEY_DOC["id"]
    stores = (second_store(), second_store())
    for attempt in range(15):
        store.grant(survey_id, dave.id, "owner", NOW)
        start = threading.Barrier(2)
        outcomes: list[str] = []

        def remove(
            target: int,
            mine: Store,
            start: threading.Barrier = start,
            outcomes: list[str] = outcomes,
        ) -> None:
            start.wait()
            try:
                mine.revoke_grant(survey_id, target)
                outcomes.append("removed")
            except LastOwnerError:
                outcomes.append("last owner")

        threads = [
            threading.Thread(target=remove, args=(dave.id, stores[0])),
            threading.Thread(target=remove, args=(alice.account_id, stores[1])),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        owners = [g.account for g in store.grants(survey_id) if g.role == "owner"]
        assert sorted(outcomes) == ["last owner", "removed"], (attempt, outcomes)
        assert len(owners) == 1, (attempt, owners)
        if owners == ["dave"]:  # alice was removed: make her owner again for the next round
            store.grant(survey_id, alice.account_id, "owner", NOW)  # type: ignore[arg-type]


def test_the_last_owner_is_kept_through_the_service_too(store: Store) -> None:
    alice = principal(store, "alice")
    create_survey(store, copy.deepcopy(SURVEY_DOC), who=alice)
    survey_id = SURVEY_DOC["id"]
    for attempt in (
        lambda: accounts.revoke(store, access.OPERATOR, survey_id, "alice"),
        lambda: accounts.grant(store, access.OPERATOR, survey_id, "alice", "analyst"),
    ):
        with pytest.raises(ActionError, match="last owner") as refused:
            attempt()
        assert refused.value.kind == "conflict"
    assert [(g.account, g.role) for g in store.grants(survey_id)] == [("alice", "owner")]


@pytest.mark.parametrize("name", ["a\x00b", "\x00", "a\nb", "a\x7fb"])
def test_an_account_name_with_a_control_character_is_no_account(store: Store, name: str) -> None:
    """A NUL cannot even be sent to PostgreSQL (a 500 before): it names no account."""
    alice = principal(store, "alice")
    create_survey(store, copy.deepcopy(SURVEY_DOC), who=alice)
    survey_id = SURVEY_DOC["id"]
    for attempt in (
        lambda: accounts.grant(store, alice, survey_id, name, "analyst"),
        lambda: accounts.revoke(store, alice, survey_id, name),
        lambda: accounts.create_token(store, access.OPERATOR, name),
        lambda: accounts.list_tokens(store, access.OPERATOR, name),
    ):
        with pytest.raises(ActionError) as refused:
            attempt()
        assert refused.value.kind == "not-found"
    with pytest.raises(ActionError) as refused:
        accounts.create_account(store, access.OPERATOR, name)
    assert refused.value.kind == "invalid"


def test_creating_a_survey_tells_nothing_of_one_the_asker_cannot_see(store: Store) -> None:
    """The same document as an invisible survey, or another one under its id: the same
    conflict, not the survey (its owners and results stay hidden; its id is public anyway)."""
    alice = principal(store, "alice")
    dave = principal(store, "dave")
    create_survey(store, copy.deepcopy(SURVEY_DOC), who=alice)
    refusals = []
    for doc in (copy.deepcopy(SURVEY_DOC), {**copy.deepcopy(SURVEY_DOC), "title": "Other"}):
        with pytest.raises(ActionError) as refused:
            create_survey(store, doc, who=dave)
        refusals.append((refused.value.kind, str(refused.value)))
    assert refusals[0] == refusals[1] and refusals[0][0] == "conflict"
    assert access.visible_surveys(store, dave) == []
    record, created = create_survey(store, copy.deepcopy(SURVEY_DOC), who=alice)
    assert not created and record.id == SURVEY_DOC["id"]  # the owner's retry is still fine


@pytest.mark.parametrize("name", ["operator", "Operator", "OPERATOR"])
def test_no_account_is_named_like_the_operator(store: Store, name: str) -> None:
    with pytest.raises(ActionError, match="command line") as refused:
        accounts.create_account(store, access.OPERATOR, name)
    assert refused.value.kind == "invalid"
