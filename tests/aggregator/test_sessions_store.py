"""Dashboard sessions in both stores: tied to a token, ended by logout, revocation and age; the
sessions migration upgrades a database of the version before it."""

from __future__ import annotations

import pytest

from deniable.aggregator.store.sqlite import SQLiteStore

T0 = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T12:00:00Z"
NOW = "2026-01-01T06:00:00Z"
#: Before every session here: what opened_after is when no session is too old.
EARLY = "2025-12-31T00:00:00Z"


def test_a_session_needs_a_stored_token(store):
    assert not store.open_session("s1", "no-such-token", T0, LATER)
    assert store.session_token("s1", NOW, opened_after=EARLY) is None
    store.add_admin_token("t1", "alice", T0)
    assert store.open_session("s1", "t1", T0, LATER)
    assert store.session_token("s1", NOW, opened_after=EARLY) == "t1"
    assert store.session_token("s2", NOW, opened_after=EARLY) is None


def test_ending_a_session_ends_it_and_only_it(store):
    store.add_admin_token("t1", "alice", T0)
    assert store.open_session("s1", "t1", T0, LATER)
    assert store.open_session("s2", "t1", T0, LATER)
    store.end_session("s1", NOW)
    assert store.session_token("s1", NOW, opened_after=EARLY) is None
    assert store.session_token("s2", NOW, opened_after=EARLY) == "t1"


def test_removing_a_token_ends_its_sessions_and_no_other(store):
    store.add_admin_token("t1", "alice", T0)
    store.add_admin_token("t2", "bob", T0)
    assert store.open_session("s1", "t1", T0, LATER)
    assert store.open_session("s2", "t2", T0, LATER)
    assert store.remove_tokens("alice") == 1
    assert store.session_token("s1", NOW, opened_after=EARLY) is None
    assert store.session_token("s2", NOW, opened_after=EARLY) == "t2"
    # Gone from the table, not merely hidden; the token is kept (revoked) for the audit log.
    assert _session_rows(store) == ["s2"]
    assert store.token_by_hash("t1").revoked_at is not None
    assert not store.open_session("s3", "t1", NOW, LATER)


def test_an_expired_or_too_old_session_is_refused_and_deleted(store):
    store.add_admin_token("t1", "alice", T0)
    assert store.open_session("old", "t1", T0, LATER)
    assert store.open_session("young", "t1", NOW, "2026-01-01T18:00:00Z")
    # Past expires_at: refused, and the row goes.
    assert store.session_token("old", LATER, opened_after=EARLY) is None
    assert store.session_token("old", NOW, opened_after=EARLY) is None
    # Opened before `opened_after` (DENIABLE_SESSION_HOURS lowered since): refused.
    assert store.session_token("young", NOW, opened_after=NOW) is None
    assert store.session_token("young", NOW, opened_after=T0) is None


def test_expired_sessions_are_purged_at_login_and_logout(store):
    store.add_admin_token("t1", "alice", T0)
    assert store.open_session("a", "t1", T0, NOW)
    assert store.open_session("b", "t1", T0, LATER)
    assert store.open_session("c", "t1", NOW, LATER)  # a's expiry: a goes
    assert _session_rows(store) == ["b", "c"]
    store.end_session("c", LATER)  # b expires then: both go
    assert _session_rows(store) == []


def _session_rows(store) -> list[str]:
    with store._query() as conn:
        rows = store._run(conn, "SELECT hash FROM sessions ORDER BY hash").fetchall()
    return [row[0] for row in rows]


def _old_token(store, token_hash: str, name: str) -> None:
    """A token as the schema before accounts stored it (hash, name, created_at)."""
    with store._write() as conn:
        store._run(
            conn,
            "INSERT INTO tokens (hash, name, created_at) VALUES (?, ?, ?)",
            (token_hash, name, T0),
        )


def test_the_sessions_migration_upgrades_an_sqlite_database(tmp_path, monkeypatch):
    import deniable.aggregator.store.sqlite as sqlite_store

    current = sqlite_store.MIGRATIONS
    store = SQLiteStore.in_data_dir(tmp_path / "d")
    monkeypatch.setattr(sqlite_store, "MIGRATIONS", current[:2])  # before sessions
    assert store.migrate() == 2
    _old_token(store, "t1", "alice")
    store.create_survey("s", "{}", "h" * 64, {"q": 2}, T0)
    assert "sessions" not in store.db.table_names()
    monkeypatch.setattr(sqlite_store, "MIGRATIONS", current)
    assert store.migrate() == len(current)
    assert store.token_hashes() == ["t1"] and store.get_survey("s") is not None
    assert store.open_session("s1", "t1", T0, LATER)
    assert store.session_token("s1", NOW, opened_after=EARLY) == "t1"
    store.close()


def test_the_sessions_migration_upgrades_a_postgres_database(postgres_cluster, monkeypatch):
    pytest.importorskip("psycopg")
    import deniable.aggregator.store.postgres as postgres_store

    current = postgres_store.MIGRATIONS
    store = postgres_store.PostgresStore(postgres_cluster.database())
    try:
        monkeypatch.setattr(postgres_store, "MIGRATIONS", current[:4])  # before sessions
        assert store.migrate() == 4
        _old_token(store, "t1", "alice")
        store.create_survey("s", "{}", "h" * 64, {"q": 2}, T0)
        with store._conn() as conn:
            assert conn.execute("SELECT to_regclass('sessions')").fetchone()[0] is None
        monkeypatch.setattr(postgres_store, "MIGRATIONS", current)
        assert store.migrate() == len(current)
        assert store.schema_version() == len(current)
        assert store.token_hashes() == ["t1"] and store.get_survey("s") is not None
        assert store.open_session("s1", "t1", T0, LATER)
        assert store.session_token("s1", NOW, opened_after=EARLY) == "t1"
    finally:
        postgres_store.close_pools()
