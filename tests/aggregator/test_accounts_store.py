"""Accounts, tokens, roles and the audit log in both stores (docs/accounts.md): tokens found by
hash, revoked for good and ending their sessions, expiring; roles granted with a survey in one
transaction; the audit log streamed in order; and the upgrade of a database made before
accounts, whose tokens become admin tokens and whose sessions keep working."""

from __future__ import annotations

import sqlite3

import pytest

import deniable.aggregator.store.sql_people as sql_store
from deniable.aggregator.credentials import TOKEN_ID_CHARS, digest, token_id
from deniable.aggregator.store import AuditEntry
from deniable.aggregator.store.sqlite import SQLiteStore

try:
    import psycopg

    INTEGRITY_ERRORS: tuple[type[Exception], ...] = (sqlite3.IntegrityError, psycopg.IntegrityError)
except ImportError:
    INTEGRITY_ERRORS = (sqlite3.IntegrityError,)

T0 = "2026-01-01T00:00:00Z"
NOW = "2026-01-01T06:00:00Z"
LATER = "2026-01-01T12:00:00Z"
EARLY = "2025-12-31T00:00:00Z"
H1, H2, H3 = digest("token-1"), digest("token-2"), digest("token-3")


def test_account_names_are_unique_and_listed_by_name(store):
    bob = store.create_account("bob", False, T0)
    alice = store.create_account("alice", True, NOW)
    assert bob is not None and alice is not None and bob.id != alice.id
    assert store.create_account("bob", True, LATER) is None  # taken: nothing changes
    assert store.get_account("bob") == bob and not bob.admin
    assert store.get_account("alice").admin
    assert store.get_account("carol") is None
    assert [(a.name, a.admin, a.created_at) for a in store.list_accounts()] == [
        ("alice", True, NOW),
        ("bob", False, T0),
    ]


def test_a_token_round_trips_with_its_scope_limits_and_expiry(store):
    bob = store.create_account("bob", False, T0)
    made = store.add_token(
        H1, bob.id, "laptop", T0, expires_at=LATER, read_only=True, surveys=["s1", "s2"]
    )
    assert made.id == H1[:TOKEN_ID_CHARS] == token_id(H1) and len(made.id) == 12
    assert (made.account, made.account_id, made.admin, made.name) == (
        "bob",
        bob.id,
        False,
        "laptop",
    )
    assert made.read_only and made.surveys == ("s1", "s2") and made.expires_at == LATER
    assert made.created_at == T0 and made.revoked_at is None
    assert store.token_by_hash(H1) == made
    assert made.live(NOW) and not made.live(LATER)  # expired at its expiry
    assert store.token_by_hash(H2) is None

    plain = store.add_token(H2, bob.id, "server", NOW)
    assert plain.surveys is None and not plain.read_only and plain.expires_at is None
    assert plain.live("9999-01-01T00:00:00Z")
    empty = store.add_token(H3, bob.id, "none", NOW, surveys=[])
    assert empty.surveys == ()  # limited to no survey is not unlimited
    assert [t.id for t in store.list_tokens(bob.id)] == [made.id, plain.id, empty.id]
    assert store.list_tokens(bob.id + 1000) == []


def test_a_token_needs_a_known_account_and_a_new_hash(store):
    bob = store.create_account("bob", False, T0)
    with pytest.raises(ValueError, match="no account"):
        store.add_token(H1, bob.id + 1000, "x", T0)
    store.add_token(H1, bob.id, "x", T0)
    with pytest.raises(ValueError, match="already stored"):
        store.add_token(H1, bob.id, "again", NOW)
    assert [t.name for t in store.list_tokens()] == ["x"]


def test_admin_tokens_belong_to_an_admin_account_of_their_name(store):
    first = store.add_admin_token(H1, "ops", T0)
    second = store.add_admin_token(H2, "ops", NOW)
    assert first.admin and second.admin and first.account_id == second.account_id
    assert first.account == first.name == "ops"
    assert [a.name for a in store.list_accounts()] == ["ops"]
    store.create_account("bob", False, T0)
    with pytest.raises(ValueError, match="'bob' is not an admin"):
        store.add_admin_token(H3, "bob", T0)
    assert store.token_by_hash(H3) is None


def test_revoking_a_token_ends_its_sessions_and_keeps_the_first_time(store):
    store.add_admin_token(H1, "ops", T0)
    other = store.add_admin_token(H2, "ops", T0)
    assert store.open_session("s1", H1, T0, LATER)
    assert store.open_session("s2", H2, T0, LATER)
    revoked = store.revoke_token(token_id(H1), NOW)
    assert revoked is not None and revoked.revoked_at == NOW and not revoked.live(NOW)
    assert store.session_token("s1", NOW, opened_after=EARLY) is None
    assert store.session_token("s2", NOW, opened_after=EARLY) == H2
    assert not store.open_session("s3", H1, NOW, LATER)
    again = store.revoke_token(token_id(H1), LATER)
    assert again.revoked_at == NOW  # the first revocation stands
    assert store.token_by_hash(H1).revoked_at == NOW  # kept, for the audit log
    assert store.revoke_token("000000000000", NOW) is None
    assert store.token_by_hash(H2) == other


def test_an_expired_token_opens_no_session_and_its_open_sessions_die(store):
    ops = store.add_admin_token(H1, "ops", T0)
    store.add_token(H2, ops.account_id, "short", T0, expires_at=NOW)
    assert store.open_session("s1", H2, T0, LATER)  # live at T0
    assert store.session_token("s1", "2026-01-01T05:59:59Z", opened_after=EARLY) == H2
    assert store.session_token("s1", NOW, opened_after=EARLY) is None  # expired at NOW
    assert store.session_token("s1", T0, opened_after=EARLY) is None  # and deleted then
    assert not store.open_session("s2", H2, NOW, LATER)
    assert not store.open_session("s3", H2, LATER, "2026-01-02T00:00:00Z")
    assert store.open_session("s4", H1, LATER, "2026-01-02T00:00:00Z")


def test_grants_upsert_revoke_and_list(store):
    store.create_survey("s1", "{}", "h" * 64, {"q": 2}, T0)
    store.create_survey("s2", "{}", "h" * 64, {"q": 2}, T0)
    bob = store.create_account("bob", False, T0)
    amy = store.create_account("amy", False, T0)
    store.grant("s1", bob.id, "analyst", T0)
    store.grant("s1", bob.id, "owner", NOW)  # replaces the role
    store.grant("s2", bob.id, "analyst", NOW)
    store.grant("s1", amy.id, "analyst", LATER)
    assert store.roles_of(bob.id) == {"s1": "owner", "s2": "analyst"}
    assert [(g.account, g.account_id, g.role, g.granted_at) for g in store.grants("s1")] == [
        ("amy", amy.id, "analyst", LATER),
        ("bob", bob.id, "owner", NOW),
    ]
    assert store.revoke_grant("s2", bob.id)
    assert not store.revoke_grant("s2", bob.id)
    assert store.roles_of(bob.id) == {"s1": "owner"}
    assert store.grants("s2") == []
    with pytest.raises(ValueError, match="no survey"):
        store.grant("nope", bob.id, "owner", T0)
    with pytest.raises(ValueError, match="no account"):
        store.grant("s1", bob.id + 1000, "owner", T0)
    with pytest.raises(ValueError, match="not one of owner, analyst"):
        store.grant("s1", bob.id, "admin", T0)  # type: ignore[arg-type]
    assert store.roles_of(bob.id) == {"s1": "owner"}


def test_the_database_itself_refuses_an_unknown_role(store):
    store.create_survey("s1", "{}", "h" * 64, {"q": 2}, T0)
    bob = store.create_account("bob", False, T0)
    with pytest.raises(INTEGRITY_ERRORS, match="(?i)check"):
        with store._write() as conn:
            store._run(
                conn,
                "INSERT INTO grants (survey_id, account_id, role, granted_at) VALUES (?, ?, ?, ?)",
                ("s1", bob.id, "admin", T0),
            )
    assert store.grants("s1") == []


def test_a_survey_and_its_owner_are_stored_together(store):
    bob = store.create_account("bob", False, T0)
    amy = store.create_account("amy", False, T0)
    assert store.create_survey("s1", "{}", "h" * 64, {"q": 2}, T0, owner=bob.id)
    assert [(g.account, g.role, g.granted_at) for g in store.grants("s1")] == [("bob", "owner", T0)]
    # A taken id changes nothing: amy gets no role on bob's survey.
    assert not store.create_survey("s1", "{}", "g" * 64, {"q": 3}, NOW, owner=amy.id)
    assert store.roles_of(amy.id) == {}
    assert [g.account for g in store.grants("s1")] == ["bob"]
    # An unknown owner undoes the survey too.
    with pytest.raises(INTEGRITY_ERRORS):
        store.create_survey("s2", "{}", "h" * 64, {"q": 2}, T0, owner=bob.id + 1000)
    assert store.get_survey("s2") is None
    assert store.create_survey("s3", "{}", "h" * 64, {"q": 2}, T0)  # no owner: no grant
    assert store.grants("s3") == []


def _entry(time: str, action: str, survey: str | None = "s1", **params: object) -> AuditEntry:
    return AuditEntry(time, "bob", "0123456789ab", survey, action, params)


def test_the_audit_log_streams_in_order_filtered(store, monkeypatch):
    monkeypatch.setattr(sql_store, "AUDIT_ROWS_AT_ONCE", 3)  # several pages
    entries = [
        _entry(f"2026-01-01T00:00:{i:02d}Z", f"a{i}", survey="s1" if i % 2 else "s2")
        for i in range(10)
    ]
    # Appended out of time order (clocks step back): the log keeps the order of appending.
    entries.append(_entry("2025-12-31T23:59:59Z", "late", survey=None))
    for entry in entries:
        store.append_audit(entry)
    assert list(store.iter_audit()) == entries
    assert [e.action for e in store.iter_audit(survey="s1")] == ["a1", "a3", "a5", "a7", "a9"]
    since = "2026-01-01T00:00:06Z"
    assert [e.action for e in store.iter_audit(since=since)] == ["a6", "a7", "a8", "a9"]
    assert [e.action for e in store.iter_audit(survey="s2", since=since)] == ["a6", "a8"]
    assert list(store.iter_audit(survey="s3")) == []


def test_audit_params_round_trip_and_serialize(store):
    params = {"formula": "smokes ~ C(region)", "confidence": 0.9, "candidates": ["é", "😀"],
              "simultaneous": True, "limit": None, "nested": {"k": [1, 2]}}  # fmt: skip
    entry = AuditEntry(T0, "bob", None, None, "token.revoke", params)
    store.append_audit(entry)
    (back,) = store.iter_audit()
    assert back == entry and back.params == params and back.token_id is None
    assert back.to_dict() == {
        "time": T0,
        "account": "bob",
        "token_id": None,
        "survey": None,
        "action": "token.revoke",
        "params": params,
    }


def test_purging_the_audit_log_deletes_only_older_entries(store):
    for i in range(5):
        store.append_audit(_entry(f"2026-01-0{i + 1}T00:00:00Z", f"a{i}"))
    assert store.purge_audit("2026-01-03T00:00:00Z") == 2
    assert store.purge_audit("2026-01-03T00:00:00Z") == 0
    assert [e.action for e in store.iter_audit()] == ["a2", "a3", "a4"]
    store.append_audit(_entry("2026-01-01T00:00:00Z", "after"))  # later, whatever its time
    assert [e.action for e in store.iter_audit()] == ["a2", "a3", "a4", "after"]


# The upgrade of a database made before accounts.


def _old_tokens(store) -> None:
    """Two tokens as the schema before accounts stored them (one of no name), a live session."""
    with store._write() as conn:
        for token_hash, name, created in ((H1, "alice", T0), (H2, None, NOW)):
            store._run(
                conn,
                "INSERT INTO tokens (hash, name, created_at) VALUES (?, ?, ?)",
                (token_hash, name, created),
            )
        store._run(
            conn,
            "INSERT INTO sessions (hash, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?)",
            ("s1", H1, T0, LATER),
        )
    store.create_survey("s", "{}", "h" * 64, {"q": 2}, T0)


def _upgraded(store) -> None:
    """What the upgrade must have made of _old_tokens."""
    alice, researcher = store.token_by_hash(H1), store.token_by_hash(H2)
    assert (alice.id, alice.account, alice.admin, alice.name) == (H1[:12], "alice", True, "alice")
    assert (researcher.id, researcher.account, researcher.admin) == (H2[:12], "researcher", True)
    for token in (alice, researcher):
        assert token.live("9999-01-01T00:00:00Z") and not token.read_only
        assert token.surveys is None and token.expires_at is None and token.revoked_at is None
    assert [(a.name, a.admin, a.created_at) for a in store.list_accounts()] == [
        ("alice", True, T0),
        ("researcher", True, NOW),
    ]
    assert store.session_token("s1", NOW, opened_after=EARLY) == H1
    assert store.get_survey("s") is not None and store.roles_of(alice.account_id) == {}
    # The upgraded tables work as new ones: a token, a role, an entry of the log.
    more = store.add_token(H3, alice.account_id, "more", LATER)
    assert store.token_by_hash(H3) == more
    store.grant("s", researcher.account_id, "owner", LATER)
    store.append_audit(_entry(LATER, "grant"))
    assert [e.action for e in store.iter_audit()] == ["grant"]
    assert store.revoke_token(alice.id, LATER).revoked_at == LATER
    assert store.session_token("s1", NOW, opened_after=EARLY) is None


def test_the_accounts_migration_upgrades_an_sqlite_database(tmp_path, monkeypatch):
    import deniable.aggregator.store.sqlite as sqlite_store

    current = sqlite_store.MIGRATIONS
    store = SQLiteStore.in_data_dir(tmp_path / "d")
    monkeypatch.setattr(sqlite_store, "MIGRATIONS", current[:3])  # before accounts
    assert store.migrate() == 3
    _old_tokens(store)
    monkeypatch.setattr(sqlite_store, "MIGRATIONS", current)
    assert store.migrate() == len(current)
    _upgraded(store)
    assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []
    store.close()


def test_the_accounts_migration_upgrades_a_postgres_database(postgres_cluster, monkeypatch):
    pytest.importorskip("psycopg")
    import deniable.aggregator.store.postgres as postgres_store

    current = postgres_store.MIGRATIONS
    store = postgres_store.PostgresStore(postgres_cluster.database())
    try:
        monkeypatch.setattr(postgres_store, "MIGRATIONS", current[:5])  # before accounts
        assert store.migrate() == 5
        _old_tokens(store)
        monkeypatch.setattr(postgres_store, "MIGRATIONS", current)
        assert store.migrate() == len(current)
        assert store.schema_version() == len(current)
        _upgraded(store)
    finally:
        postgres_store.close_pools()
