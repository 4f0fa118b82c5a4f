"""What only the PostgreSQL store has: its migrations, its errors, many processes writing at once."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from deniable.aggregator.store import NewReport, StoreError, open_store

psycopg = pytest.importorskip("psycopg")
from deniable.aggregator.store.postgres import (  # noqa: E402
    MIGRATIONS,
    PostgresStore,
    close_pools,
)


def pattern(option: int) -> str:
    """The answer pattern of a report answering `option` to the one question "q"."""
    return f'{{"answers":{{"q":{option}}}}}'


def report(rid: str, key: str, option: int = 1) -> NewReport:
    return NewReport(rid, "s", key, f"body-{rid}", {"q": (option,)}, pattern(option))


@pytest.fixture
def url(postgres_cluster) -> str:
    yield postgres_cluster.database()
    close_pools()


def test_migrations_bring_a_new_database_to_the_current_version_once(url):
    store = PostgresStore(url)
    assert store.schema_version() == 0
    assert store.migrate() == len(MIGRATIONS)
    assert store.schema_version() == len(MIGRATIONS)
    assert store.migrate() == len(MIGRATIONS)


def test_a_newer_schema_is_refused(url):
    store = PostgresStore(url)
    store.migrate()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE schema_version SET version = version + 1")
    with pytest.raises(StoreError, match="newer"):
        store.migrate()


def test_reports_hold_no_ip_no_agent_and_codes_are_not_linked_to_keys(url):
    PostgresStore(url).migrate()
    with psycopg.connect(url) as conn:

        def columns(table: str) -> set[str]:
            rows = conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = %s AND table_schema = current_schema()",
                (table,),
            )
            return {name for (name,) in rows}

        assert columns("reports") == {
            "seq",
            "report_id",
            "survey_id",
            "public_key",
            "body",
            "received_hour",
        }
        assert columns("enrollments") == {"survey_id", "public_key"}
        assert "public_key" not in columns("invitations")


def _migrate(url: str) -> int:
    store = PostgresStore(url)
    return store.migrate()


def test_processes_migrating_at_once_migrate_once(url):
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        assert pool.map(_migrate, [url] * 4) == [len(MIGRATIONS)] * 4
    assert PostgresStore(url).schema_version() == len(MIGRATIONS)


def _write(args: tuple[str, int]) -> list[str]:
    url, worker = args
    store = PostgresStore(url)
    outcomes: list[str] = []
    for i in range(40):
        # every worker sends the same shared reports, a second report from a shared key,
        # and its own
        outcomes += store.add_reports(
            [
                report(f"shared-{i}", f"shared-{i}"),
                report(f"again-{worker}-{i}", f"shared-{i}"),
                report(f"w{worker}-{i}", f"w{worker}-{i}", option=0),
            ],
            "h",
        )
    return outcomes


def test_processes_writing_at_once_lose_and_double_count_nothing(url):
    store = PostgresStore(url)
    store.migrate()
    store.create_survey("s", "{}", "h", {"q": 2}, "now")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(_write, [(url, w) for w in range(4)])
    outcomes = [o for result in results for o in result]
    assert outcomes.count("accepted") == 40 + 4 * 40
    assert outcomes.count("duplicate") == 3 * 40
    assert outcomes.count("answered") == 4 * 40
    assert store.tallies("s") == (40 + 4 * 40, {"q": [160, 40]})
    assert store.get_survey("s").report_count == 200
    found = store.recount("s", lambda bodies: (sum(1 for _ in bodies), {"q": [0, 0]}, {}))
    assert found.stored_n == found.counted_n == 200  # n over the shards equals a recount


def _counting(bodies) -> tuple[int, dict[str, list[int]], dict[str, int]]:
    """A BodyCounter for bodies "<option>:<id>" of one question "q" with two options."""
    support = [0, 0]
    n = 0
    for body in bodies:
        n += 1
        support[int(body.split(":")[0])] += 1
    return n, {"q": support}, {pattern(o): c for o, c in enumerate(support) if c}


def test_threads_writing_one_survey_spread_over_shards_and_count_exactly(url):
    store = PostgresStore(url)
    store.migrate()
    store.create_survey("s", "{}", "h", {"q": 2}, "now")
    outcomes: list[str] = []

    def write(worker: int) -> None:
        for i in range(30):
            option = (worker + i) % 2
            new = NewReport(
                f"w{worker}-{i}",
                "s",
                f"w{worker}-{i}",
                f"{option}:{i}",
                {"q": (option,)},
                pattern(option),
            )
            outcomes.extend(store.add_reports([new], "h"))
            outcomes.extend(store.add_reports([new], "h"))  # a retry: a duplicate

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(set(outcomes)) == ["accepted", "duplicate"]
    assert outcomes.count("accepted") == 240
    assert store.tallies("s") == (240, {"q": [120, 120]})
    assert store.get_survey("s").report_count == 240
    assert [r.report_count for r in store.list_surveys()] == [240]
    with psycopg.connect(url) as conn:
        shards = conn.execute("SELECT count(*) FROM count_shards").fetchone()[0]
        assert shards > 1  # the writers did not all queue on one row
        assert conn.execute("SELECT sum(reports) FROM count_shards").fetchone()[0] == 240
    found = store.recount("s", _counting)
    assert found.consistent and (found.stored_n, found.stored) == (240, {"q": [120, 120]})
    assert store.tallies("s") == (found.counted_n, found.counted)
    # a repair folds the shards into the base and keeps every count
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE tallies SET support = support + 5 WHERE option_index = 1")
    assert store.tallies("s") == (240, {"q": [120, 125]})
    assert not store.recount("s", _counting, repair=True).consistent
    assert store.tallies("s") == (240, {"q": [120, 120]})
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM tally_shards").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM count_shards").fetchone()[0] == 0
    assert store.recount("s", _counting).consistent
    store.add_reports([NewReport("late", "s", "late", "0:late", {"q": (0,)}, pattern(0))], "h")
    assert store.tallies("s") == (241, {"q": [121, 120]})
    assert store.recount("s", _counting).consistent


def test_writers_share_the_survey_lock_and_a_close_waits_for_them(url):
    store = PostgresStore(url)
    store.migrate()
    store.create_survey("s", "{}", "h", {"q": 2}, "now")
    with psycopg.connect(url) as conn:  # a writer in flight...
        conn.execute("SELECT 1 FROM surveys WHERE id = 's' FOR SHARE")
        # ...does not hold up another writer
        assert store.add_reports([report("a", "ka")], "h") == ["accepted"]
        closed: list[object] = []
        closer = threading.Thread(target=lambda: closed.append(store.close_survey("s", "t")))
        closer.start()
        closer.join(0.3)
        assert closer.is_alive()  # but a close waits for it
        conn.commit()
    closer.join(5)
    assert closed[0].closed_at == "t"
    assert store.add_reports([report("b", "kb")], "h") == ["closed"]
    assert store.tallies("s") == (1, {"q": [0, 1]})


def test_the_sharding_migration_keeps_the_totals(url, monkeypatch):
    import deniable.aggregator.store.postgres as postgres_store

    store = PostgresStore(url)
    monkeypatch.setattr(postgres_store, "MIGRATIONS", MIGRATIONS[:2])
    assert store.migrate() == 2
    with psycopg.connect(url) as conn:  # a survey counted by the version before shards
        conn.execute(
            "INSERT INTO surveys (id, resolved, hash, created_at, report_count) "
            "VALUES ('s', '{}', 'h', 'now', 7)"
        )
        conn.execute(
            "INSERT INTO tallies (survey_id, question_id, option_index, support) "
            "VALUES ('s', 'q', 0, 3), ('s', 'q', 1, 4)"
        )
    monkeypatch.setattr(postgres_store, "MIGRATIONS", MIGRATIONS)
    assert store.migrate() == len(MIGRATIONS)
    assert store.tallies("s") == (7, {"q": [3, 4]})
    assert store.add_reports([report("a", "k")], "h") == ["accepted"]
    assert store.tallies("s") == (8, {"q": [3, 5]})
    assert store.get_survey("s").report_count == 8


def test_threads_enrolling_one_key_spend_one_code(url):
    store = PostgresStore(url)
    store.migrate()
    store.create_survey("s", "{}", "h", {"q": 2}, "now")
    codes = [f"c{i}" for i in range(8)]
    store.add_invitations("s", codes, "now")
    outcomes: list[str] = []
    threads = [
        threading.Thread(target=lambda c=c: outcomes.append(store.enroll("s", "k", c)))
        for c in codes
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["already"] * 7 + ["enrolled"]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT sum(used) FROM invitations").fetchone()[0] == 1


def test_a_closed_survey_is_seen_by_a_waiting_writer(url):
    store = PostgresStore(url)
    store.migrate()
    store.create_survey("s", "{}", "h", {"q": 2}, "now")
    with psycopg.connect(url) as conn:  # close in a transaction still open...
        conn.execute("UPDATE surveys SET closed_at = 'now' WHERE id = 's'")
        result: list[list[str]] = []
        writer = threading.Thread(
            target=lambda: result.append(store.add_reports([report("a", "k")], "h"))
        )
        writer.start()
        writer.join(0.3)
        assert writer.is_alive()  # ...the writer waits for it
        conn.commit()
    writer.join(5)
    assert result == [["closed"]]
    assert store.tallies("s")[0] == 0


def test_streaming_uses_a_server_side_cursor_in_chunks(url):
    store = PostgresStore(url)
    store.migrate()
    store.create_survey("s", "{}", "h", {"q": 2}, "now")
    store.add_reports([report(str(i), f"k{i}") for i in range(25)], "h")
    bodies = store.iter_report_bodies("s", chunk=4)
    assert next(bodies) == "body-0"
    with psycopg.connect(url) as conn:  # the cursor is open on the server while we read
        (open_cursors,) = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'FETCH FORWARD 4%%'"
        ).fetchone()
    assert open_cursors == 1
    assert [next(bodies) for _ in range(24)] == [f"body-{i}" for i in range(1, 25)]


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            "postgresql://127.0.0.1:1/nothing",
            "cannot connect to the database postgresql://127.0.0.1:1/nothing",
        ),
        ("postgresql://u:secret@[bad", "not a valid PostgreSQL URL"),
        ("mysql://x/y", "only postgresql:// URLs"),
    ],
)
def test_a_bad_or_unreachable_database_is_one_clear_line(bad, message):
    with pytest.raises(StoreError) as caught:
        open_store({"DATABASE_URL": bad, "BUSY_TIMEOUT": 2000}).migrate()
    assert message in str(caught.value)
    assert "secret" not in str(caught.value) and "\n" not in str(caught.value)


def test_pattern_shards_fold_beside_writers_and_every_count_stays(url):
    """Writers spread a pattern's counts over shard rows; folds running meanwhile move them
    into one row per pattern (locking rows in the writers' order: no deadlock), and no report
    is lost or counted twice."""
    store = PostgresStore(url)
    store.migrate()
    store.create_survey("s", "{}", "h", {"q": 2}, "now")
    writing = threading.Event()
    writing.set()
    folds: list[bool] = []

    def write(worker: int) -> None:
        for i in range(30):
            option = (worker + i) % 2
            store.add_reports([report(f"w{worker}-{i}", f"w{worker}-{i}", option)], "h")

    def fold() -> None:
        while writing.is_set():
            folds.append(store.fold_patterns("s"))

    folder = threading.Thread(target=fold)
    folder.start()
    writers = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    writing.clear()
    folder.join()
    assert any(folds)  # folded while the writers wrote
    assert store.pattern_counts("s") == {pattern(0): 120, pattern(1): 120}
    store.fold_patterns("s", at=1.0)  # any shard row left
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT count(*) FROM pattern_shards").fetchone()[0]
    assert rows == 2  # one row a pattern once folded
    assert store.answer_counts("s", ["q"]) == {(0,): 120, (1,): 120}
    assert store.tallies("s") == (240, {"q": [120, 120]})
