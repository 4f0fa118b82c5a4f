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
