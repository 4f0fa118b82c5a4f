"""What only the PostgreSQL store has: its migrations, its errors, many processes writing at once."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from deniable.aggregator.store import NewReport, StoreError, open_store

psycopg = pytest.importorskip("psycopg")
from deniable.aggregator.postgres_store import (  # noqa: E402
    MIGRATIONS,
    PostgresStore,
    close_pools,
)


def report(rid: str, key: str, option: int = 1) -> NewReport:
    return NewReport(rid, "s", key, f"body-{rid}", {"q": (option,)})


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
