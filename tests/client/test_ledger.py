"""The ledger and outbox: rows, epsilon sums, statuses, transactions."""

from __future__ import annotations

import json
import sqlite3
import stat
import uuid
from pathlib import Path

import pytest

from deniable.client.ledger import Ledger


def report(survey: str) -> dict[str, object]:
    return {
        "v": 1,
        "survey": survey,
        "survey_hash": "0" * 64,
        "answers": {"q": 1},
        "report_id": str(uuid.uuid4()),
        "sent_at": "2026-11-22T18:00:00Z",
        "public_key": "k",
        "signature": "s",
    }


def test_store_sum_mark_and_pending(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "home")
    first, second = report("one"), report("two")
    with ledger.transaction() as tx:
        tx.insert("http://a", "One", 1.5, first)
        tx.insert("http://a", "Two", 2.25, second)
    assert ledger.spent() == pytest.approx(3.75)
    assert [s.entry.survey for s in ledger.pending()] == ["one", "two"]
    ledger.mark(first["report_id"], "sent", "accepted", None)  # type: ignore[arg-type]
    stored = ledger.get("http://a", "one")
    assert stored is not None and stored.entry.status == "sent" and stored.result == "accepted"
    assert stored.report == first
    assert [s.entry.survey for s in ledger.pending()] == ["two"]
    assert ledger.spent() == pytest.approx(3.75)  # sending costs nothing
    assert stat.S_IMODE(ledger.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(ledger.path.parent.stat().st_mode) == 0o700


def test_transaction_rolls_back_on_error(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    with pytest.raises(RuntimeError), ledger.transaction() as tx:
        tx.insert("http://a", "One", 1.0, report("one"))
        raise RuntimeError("boom")
    assert ledger.get("http://a", "one") is None
    assert ledger.spent() == 0


def test_one_row_per_server_and_survey(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    with ledger.transaction() as tx:
        tx.insert("http://a", "One", 1.0, report("one"))
    with pytest.raises(sqlite3.IntegrityError), ledger.transaction() as tx:
        tx.insert("http://a", "One", 1.0, report("one"))
    with ledger.transaction() as tx:
        tx.insert("http://b", "One", 1.0, report("one"))
    assert len(ledger.entries()) == 2


def test_wal_mode(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.spent()
    with sqlite3.connect(ledger.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        row = conn.execute("SELECT count(*) FROM reports").fetchone()
    assert json.dumps(row) == "[0]"


#: The ledger as version 1 wrote it (before retry_at).
SCHEMA_V1 = """
CREATE TABLE reports (
    server TEXT NOT NULL, survey TEXT NOT NULL, survey_hash TEXT NOT NULL, title TEXT NOT NULL,
    epsilon REAL NOT NULL, report_id TEXT NOT NULL UNIQUE, report TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'rejected')), result TEXT,
    reason TEXT, attempts INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, PRIMARY KEY (server, survey)
);
"""


def test_a_version_1_ledger_keeps_its_reports_and_learns_retry_at(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    old = report("s1")
    with sqlite3.connect(home / "ledger.sqlite3") as conn:
        conn.executescript(SCHEMA_V1)
        conn.execute(
            "INSERT INTO reports VALUES ('http://a', 's1', ?, 'T', 1.5, ?, ?, 'pending', NULL,"
            " 'HTTP 503: busy', 1, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
            (old["survey_hash"], old["report_id"], json.dumps(old)),
        )
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    ledger = Ledger(home)
    (pending,) = ledger.pending()
    assert pending.report == old and pending.entry.retry_at is None
    ledger.mark(str(old["report_id"]), "pending", None, "HTTP 429: later", "2030-01-01T00:00:00Z")
    (pending,) = ledger.pending()
    assert (pending.entry.reason, pending.entry.retry_at) == (
        "HTTP 429: later",
        "2030-01-01T00:00:00Z",
    )
    assert ledger.spent() == 1.5


def test_an_older_ledger_learns_routes_and_a_routed_report_keeps_its_relay(tmp_path: Path) -> None:
    """A ledger of version 1 or 2 gains the relay columns (its reports go straight, as they
    did); a report of a relay survey keeps its relay and key in the outbox (docs/anonymity.md)."""
    from deniable.shared import ohttp
    from deniable.shared.route import Route

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    old = report("s1")
    with sqlite3.connect(home / "ledger.sqlite3") as conn:
        conn.executescript(SCHEMA_V1)
        conn.execute(
            "INSERT INTO reports VALUES ('http://a', 's1', ?, 'T', 1.5, ?, ?, 'pending', NULL,"
            " NULL, 0, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
            (old["survey_hash"], old["report_id"], json.dumps(old)),
        )
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    ledger = Ledger(home)
    (pending,) = ledger.pending()
    assert pending.route is None
    route = Route("https://relay.example/", ohttp.keys_text([ohttp.new_gateway_key(1).config]))
    fresh = report("s2")
    with ledger.transaction() as tx:
        tx.insert("http://a", "T2", 1.0, fresh, route=route)
    routed = {p.report["survey"]: p.route for p in Ledger(home).pending()}
    assert routed == {"s1": None, "s2": route}
