"""The stores (SQLite and PostgreSQL): migrations, transactions, duplicates and replays, streaming."""

from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path

import pytest

from deniable.aggregator.store import NewReport, StoreError
from deniable.aggregator.store.base import ARM_PREFIX
from deniable.aggregator.store.sqlite import DB_FILE, MIGRATIONS, PAGE_SIZE, SQLiteStore
from deniable.shared.canonical import canonical_json


def pattern(option: int) -> str:
    """The answer pattern of a report answering `option` to the one question "q"."""
    return f'{{"answers":{{"q":{option}}}}}'


def report(rid: str, key: str = "pk", body: str | None = None, survey: str = "s", option: int = 1):
    return NewReport(rid, survey, key, body or f"body-{rid}", {"q": (option,)}, pattern(option))


try:
    import psycopg

    INTEGRITY_ERRORS: tuple[type[Exception], ...] = (sqlite3.IntegrityError, psycopg.IntegrityError)
except ImportError:
    INTEGRITY_ERRORS = (sqlite3.IntegrityError,)


@pytest.fixture
def fresh(store):
    """A migrated store (SQLite or PostgreSQL) with survey "s" of one binary question."""
    store.create_survey("s", "{}", "h" * 64, {"q": 2}, "2026-01-01T00:00:00Z")
    return store


@pytest.fixture
def sqlite_fresh(tmp_path):
    """An SQLite store, for what only SQLite has (its file, its pragmas)."""
    store = SQLiteStore.in_data_dir(tmp_path / "d")
    store.migrate()
    store.create_survey("s", "{}", "h" * 64, {"q": 2}, "2026-01-01T00:00:00Z")
    yield store
    store.close()


def test_migrations_bring_a_new_file_to_the_current_version_once(tmp_path):
    store = SQLiteStore.in_data_dir(tmp_path / "d")
    assert store.schema_version() == 0
    assert store.migrate() == len(MIGRATIONS)
    assert store.schema_version() == len(MIGRATIONS)
    assert store.migrate() == len(MIGRATIONS)  # idempotent
    tables = set(store.db.table_names())
    assert {"surveys", "reports", "tallies", "tokens", "invitations", "enrollments"} <= tables
    assert {"sessions", "accounts", "grants", "audit"} <= tables
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_a_new_file_gets_4_kib_pages_and_an_old_one_keeps_its_own(tmp_path):
    store = SQLiteStore.in_data_dir(tmp_path / "new")
    store.migrate()
    assert store.conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE == 4096
    store.close()
    (tmp_path / "old").mkdir()
    with sqlite3.connect(tmp_path / "old" / DB_FILE) as conn:  # as an earlier version made it
        conn.execute("PRAGMA page_size = 16384")
        conn.execute("PRAGMA journal_mode = wal")
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    old = SQLiteStore.in_data_dir(tmp_path / "old")
    assert old.migrate() == len(MIGRATIONS)
    old.create_survey("s", "{}", "h" * 64, {"q": 2}, "2026-01-01T00:00:00Z")
    assert old.add_reports([report("a", "k1")], "h") == ["accepted"]
    assert old.conn.execute("PRAGMA page_size").fetchone()[0] == 16384
    old.close()


def test_the_documented_page_size_conversion_keeps_every_report(tmp_path):
    """docs/operations.md's recipe, statement by statement, on a 16 KiB file with reports."""
    (tmp_path / "d").mkdir()
    path = tmp_path / "d" / DB_FILE
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA page_size = 16384")
        conn.execute("PRAGMA journal_mode = wal")
    conn.close()
    store = SQLiteStore.in_data_dir(tmp_path / "d")
    store.migrate()
    store.create_survey("s", "{}", "h" * 64, {"q": 2}, "2026-01-01T00:00:00Z")
    assert store.add_reports([report("a", "k1"), report("b", "k2")], "h") == ["accepted"] * 2
    store.close()
    recipe = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    statements = re.search(r"sqlite3 deniable\.db '([^']*)'", recipe.replace("\n  ", " "))
    assert statements is not None
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in statements.group(1).split(";"):
        conn.execute(statement)
    conn.close()
    store = SQLiteStore.in_data_dir(tmp_path / "d")
    assert store.conn.execute("PRAGMA page_size").fetchone()[0] == 4096
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.tallies("s") == (2, {"q": [0, 2]})
    assert store.stored_report("b") is not None
    store.close()


def test_opening_a_current_database_never_waits_for_a_writer(tmp_path):
    """Every process migrates on first use; when nothing is to do, it takes no write lock, so
    `results` or `verify` read while a worker holds a long write transaction."""
    SQLiteStore.in_data_dir(tmp_path / "d").migrate()
    writer = sqlite3.connect(tmp_path / "d" / DB_FILE, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        reader = SQLiteStore.in_data_dir(tmp_path / "d", busy_timeout=200)
        assert reader.migrate() == len(MIGRATIONS)
        assert reader.list_surveys() == []
        reader.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_newer_schema_is_refused(tmp_path):
    store = SQLiteStore.in_data_dir(tmp_path / "d")
    store.conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(StoreError, match="newer"):
        store.migrate()


def test_reports_hold_no_ip_no_agent_and_no_time_finer_than_the_hour(sqlite_fresh):
    fresh = sqlite_fresh
    columns = {c.name for c in fresh.db["reports"].columns}
    assert columns == {"seq", "report_id", "survey_id", "public_key", "body", "received_hour"}
    fresh.add_reports([report("a")], "2026-01-01T10:00:00Z")
    assert fresh.conn.execute("SELECT received_hour FROM reports").fetchone()[0].endswith(":00:00Z")


def test_enrollments_do_not_record_which_code_was_used(sqlite_fresh):
    fresh = sqlite_fresh
    assert {c.name for c in fresh.db["enrollments"].columns} == {"survey_id", "public_key"}
    assert "public_key" not in {c.name for c in fresh.db["invitations"].columns}


def test_a_report_and_its_tallies_commit_together(fresh):
    assert fresh.add_reports([report("a", "k1", option=1), report("b", "k2", option=0)], "h") == [
        "accepted",
        "accepted",
    ]
    assert fresh.tallies("s") == (2, {"q": [1, 1]})
    assert fresh.get_survey("s").report_count == 2


@pytest.mark.parametrize("options", [3, 300])
def test_every_tally_row_gets_its_increments(store, options):
    """A few rows or hundreds (SQLite updates them row by row or many per statement)."""
    store.create_survey("wide", "{}", "w" * 64, {"q": options, "r": 2}, "2026-01-01T00:00:00Z")
    reports = [
        NewReport(
            f"id{i}", "wide", f"k{i}", "b", {"q": tuple(range(i % options + 1)), "r": (1,)}, "{}"
        )
        for i in range(2 * options)
    ]
    assert set(store.add_reports(reports, "h")) == {"accepted"}
    expected = [sum(1 for i in range(2 * options) if i % options >= o) for o in range(options)]
    assert store.tallies("wide") == (2 * options, {"q": expected, "r": [0, 2 * options]})


def test_duplicates_replays_and_conflicts_count_nothing(fresh):
    fresh.add_reports([report("a", "k1")], "h")
    outcomes = fresh.add_reports(
        [
            report("a", "k1"),  # the same report again
            report("a", "k1", body="tampered"),  # its id with another body
            report("b", "k1"),  # another report from the same key
            report("c", "k2"),
        ],
        "h",
    )
    assert outcomes == ["duplicate", "conflict", "answered", "accepted"]
    assert fresh.tallies("s") == (2, {"q": [0, 2]})


def test_a_batch_repeating_itself_counts_once(fresh):
    assert fresh.add_reports([report("a"), report("a")], "h") == ["accepted", "duplicate"]
    assert fresh.tallies("s")[0] == 1


def test_a_mixed_batch_gets_the_outcomes_of_storing_one_by_one(fresh):
    for survey in ("t", "u"):
        fresh.create_survey(survey, "{}", "h" * 64, {"q": 2}, "2026-01-01T00:00:00Z")
    fresh.close_survey("u", "2026-01-02T00:00:00Z")
    fresh.add_reports([report("a", "k1")], "h")
    outcomes = fresh.add_reports(
        [
            report("x", "k1"),  # k1 answered s already
            report("x", "k2"),  # the same report_id from another key: stored now
            report("y", "k1", survey="t"),  # k1 in another survey
            report("z", "k3", survey="u"),  # a closed survey
            report("x", "k2"),  # sent again in the same batch
            report("w", "k4", option=0),
        ],
        "h",
    )
    assert outcomes == ["answered", "accepted", "accepted", "closed", "duplicate", "accepted"]
    assert fresh.tallies("s") == (3, {"q": [1, 2]})
    assert fresh.tallies("t") == (1, {"q": [0, 1]})
    assert fresh.tallies("u") == (0, {"q": [0, 0]})
    assert fresh.stored_report("x") == ("body-x", "k2", "s")


def test_a_report_supporting_no_option_is_counted_in_n_only(fresh):
    """An OUE report may set no bit: its transaction has no tally increment at all."""
    assert fresh.add_reports([NewReport("a", "s", "k1", "b", {"q": ()}, "{}")], "h") == ["accepted"]
    assert fresh.tallies("s") == (1, {"q": [0, 0]})


def test_a_closed_survey_takes_nothing_but_still_recognizes_resends(fresh):
    fresh.add_reports([report("a", "k1")], "h")
    fresh.close_survey("s", "2026-01-02T00:00:00Z")
    assert fresh.add_reports([report("a", "k1"), report("b", "k2")], "h") == ["duplicate", "closed"]
    assert fresh.tallies("s")[0] == 1


def test_a_purged_report_sent_again_by_its_key_is_a_duplicate(fresh):
    """Its body is gone, but its report_id and key are kept: the verified key that sent it
    sends it again. Another key under that report_id is still a conflict."""
    fresh.add_reports([report("a", "k1"), report("b", "k2")], "2026-01-01T00:00:00Z")
    assert (
        fresh.purge_reports(
            "s", "2026-01-02T00:00:00Z", lambda bodies: (len(list(bodies)), {}, {pattern(1): 2})
        )
        == 2
    )
    assert fresh.stored_report("a") == ("", "k1", "s")
    again = [report("a", "k1"), report("b", "k3"), report("a", "k1", body="other")]
    assert fresh.add_reports(again, "h") == ["duplicate", "conflict", "duplicate"]
    fresh.create_survey("t", "{}", "h" * 64, {"q": 2}, "2026-01-01T00:00:00Z")
    assert fresh.add_reports([report("a", "k1", survey="t")], "h") == ["conflict"]
    fresh.close_survey("s", "2026-01-03T00:00:00Z")
    assert fresh.add_reports([report("a", "k1")], "h") == ["duplicate"]
    assert fresh.tallies("s")[0] == 2


def test_a_failed_batch_rolls_back_entirely(fresh):
    bad = NewReport("x", "s", "k9", None, {"q": (1,)}, "{}")  # type: ignore[arg-type]  # NOT NULL body
    with pytest.raises(INTEGRITY_ERRORS):
        fresh.add_reports([report("a", "k1"), bad], "h")
    assert fresh.tallies("s") == (0, {"q": [0, 0]})
    assert fresh.stored_report("a") is None


def test_survey_ids_are_unique(fresh):
    assert fresh.create_survey("s", "{}", "x", {"q": 2}, "now") is False
    assert [r.id for r in fresh.list_surveys()] == ["s"]


def test_streaming_reads_in_chunks_in_arrival_order(fresh):
    fresh.add_reports([report(str(i), f"k{i}") for i in range(7)], "h")
    assert list(fresh.iter_report_bodies("s", chunk=3)) == [f"body-{i}" for i in range(7)]
    assert list(fresh.iter_report_bodies("other")) == []


def test_enrollment_spends_a_code_once(fresh):
    fresh.add_invitations("s", ["c1", "c2"], "now")
    assert fresh.enroll("s", "k1", "c1") == "enrolled"
    assert fresh.enroll("s", "k1", "c2") == "already"  # spends nothing
    assert fresh.enroll("s", "k2", "c1") == "used-code"
    assert fresh.enroll("s", "k2", "nope") == "unknown-code"
    assert fresh.enroll("s", "k2", "c2") == "enrolled"
    assert fresh.is_enrolled("s", "k2") and not fresh.is_enrolled("s", "k3")


def test_concurrent_writers_lose_and_double_count_nothing(tmp_path):
    path = tmp_path / "d"
    first = SQLiteStore.in_data_dir(path)
    first.migrate()
    first.create_survey("s", "{}", "h", {"q": 2}, "now")
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        store = SQLiteStore(path / DB_FILE)
        try:
            for i in range(40):
                # every worker sends the same shared reports, plus its own
                store.add_reports(
                    [
                        report(f"shared-{i}", f"shared-{i}"),
                        report(f"w{worker}-{i}", f"w{worker}-{i}"),
                    ],
                    "h",
                )
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert first.tallies("s") == (40 + 4 * 40, {"q": [0, 200]})


def test_recount_repair_and_purge_keep_every_count(store, survey, report_for):
    from deniable.aggregator.ingest import ingest
    from deniable.aggregator.stats.analyze import tally
    from deniable.aggregator.store import recount

    for _ in range(5):
        ingest(store, report_for(survey))
    count = recount.counter(store, survey.id, tally)
    n, support = store.tallies(survey.id)
    assert store.recount(survey.id, count).consistent
    bumped = NewReport("x", survey.id, "kx", "", {"smokes": (1,)}, "{}")  # counted, body empty
    store.add_reports([bumped], "2000-01-01T00:00:00Z")
    found = store.recount(survey.id, count, repair=True)
    assert not found.consistent and found.stored_n == n + 1 and found.counted_n == n
    assert store.tallies(survey.id) == (n, support)
    assert store.purge_reports(survey.id, "9999-01-01T00:00:00Z", count) == 5
    assert list(store.iter_report_bodies(survey.id)) == []
    after = store.recount(survey.id, count)
    assert after.consistent and after.purged_n == 5 and after.counted == support


def test_tokens_are_revoked_by_name(fresh):
    fresh.add_admin_token("h1", "alice", "2026-01-01T00:00:00Z")
    fresh.add_admin_token("h2", "alice", "2026-01-01T00:00:00Z")
    fresh.add_admin_token("h3", "bob", "2026-01-01T00:00:00Z")
    assert fresh.remove_tokens("alice", "2026-01-02T00:00:00Z") == 2
    assert fresh.remove_tokens("alice", "2026-01-03T00:00:00Z") == 0
    assert fresh.token_hashes("2026-01-04T00:00:00Z") == ["h3"]
    # Kept, revoked at the first revocation, for the audit log's sake.
    assert [t.revoked_at for t in fresh.list_tokens()] == [
        "2026-01-02T00:00:00Z",
        "2026-01-02T00:00:00Z",
        None,
    ]


def test_answer_counts_are_summed_from_the_answer_patterns_not_the_bodies(fresh):
    """Analyses read the patterns kept in the reports' transactions: the bodies here are not
    even JSON. A skipped question is None; an arm is read by ARM_PREFIX + its question."""
    answers = [
        {"answers": {"q": 1, "bits": "0110", "age-group": 2}},
        {"answers": {"q": 1, "bits": "0110", "age-group": 2}},
        {"answers": {"q": 0, "bits": "0110", "age-group": 1}},
        {"answers": {"q": 1, "bits": "1000", "age-group": 2}},
        {"answers": {"q": 1, "bits": "1000"}, "arms": {"q": "direct"}},
    ]
    reports = [
        NewReport(
            f"r{i}",
            "s",
            f"k{i}",
            "not json",
            {"q": (a["answers"]["q"],)},
            canonical_json(a).decode(),
        )
        for i, a in enumerate(answers)
    ]
    assert fresh.add_reports(reports, "2026-01-01T00") == ["accepted"] * 5
    counts = fresh.answer_counts("s", ["q", "bits", "age-group"])
    assert counts == {(1, "0110", 2): 2, (0, "0110", 1): 1, (1, "1000", 2): 1, (1, "1000", None): 1}
    assert fresh.answer_counts("s", ["q"]) == {(1,): 4, (0,): 1}
    assert fresh.answer_counts("s", [ARM_PREFIX + "q", "q"]) == {
        (None, 1): 3,
        (None, 0): 1,
        ("direct", 1): 1,
    }
    assert fresh.answer_counts("nope", ["q"]) == {}
    assert fresh.pattern_counts("s") == {
        canonical_json(a).decode(): 2 if i == 0 else 1 for i, a in enumerate(answers) if i != 1
    }
