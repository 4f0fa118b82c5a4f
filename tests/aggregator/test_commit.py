"""Group commit: many threads at once, each report stored once, failures never "accepted"."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence

import pytest

from deniable.aggregator.store import NewReport, StoreError, StoreOutcome
from deniable.aggregator.store.commit import GroupCommitter
from deniable.aggregator.store.sqlite import SQLiteStore

THREADS = 16
PER_THREAD = 40


def report(rid: str, key: str, option: int = 1) -> NewReport:
    return NewReport(
        rid, "s", key, f"body-{rid}", {"q": (option,)}, f'{{"answers":{{"q":{option}}}}}'
    )


@pytest.fixture
def data_dir(tmp_path):
    store = SQLiteStore.in_data_dir(tmp_path)
    store.migrate()
    store.create_survey("s", "{}", "h" * 64, {"q": 2}, "2026-01-01T00:00:00Z")
    store.close()
    return tmp_path


def run_threads(target, count: int = THREADS) -> None:
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        start.wait()
        try:
            target(i)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    # Daemon threads and one deadline for all: a thread left hanging fails the test within a
    # minute instead of holding up the run.
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not errors, errors


def test_many_threads_each_report_stored_exactly_once(data_dir):
    committer = GroupCommitter()
    answers: dict[str, list[StoreOutcome]] = {}

    def post(i: int) -> None:
        store = SQLiteStore.in_data_dir(data_dir)
        try:
            for j in range(PER_THREAD):
                # every report twice, and every other one also from a second thread
                rid, twin = f"r{i}-{j}", f"r{(i + 1) % THREADS}-{j}"
                sent = [report(rid, f"k{i}-{j}", option=j % 2)]
                if j % 2:
                    sent.append(report(twin, f"k{(i + 1) % THREADS}-{j}", option=j % 2))
                for new, outcome in zip(sent, committer.add_reports(store, sent, "h"), strict=True):
                    answers.setdefault(new.report_id, []).append(outcome)
                (again,) = committer.add_reports(store, sent[:1], "h")
                answers[rid].append(again)
        finally:
            store.close()

    run_threads(post)
    store = SQLiteStore.in_data_dir(data_dir)
    n, tallies = store.tallies("s")
    stored = [row[0] for row in store.conn.execute("SELECT report_id FROM reports")]
    assert sorted(stored) == sorted(answers)  # every report, exactly once
    for outcomes in answers.values():
        assert outcomes.count("accepted") == 1  # answered accepted once, else duplicate
        assert set(outcomes) <= {"accepted", "duplicate"}
    assert n == THREADS * PER_THREAD == sum(tallies["q"])
    assert tallies["q"] == [THREADS * PER_THREAD // 2] * 2
    assert committer.transactions < committer.tickets  # groups did form


def test_one_report_per_key_across_concurrent_requests(data_dir):
    committer = GroupCommitter()
    results: list[StoreOutcome] = []

    def post(i: int) -> None:
        store = SQLiteStore.in_data_dir(data_dir)
        try:
            results.extend(committer.add_reports(store, [report(f"r{i}", "same-key")], "h"))
        finally:
            store.close()

    run_threads(post)
    assert sorted(results) == ["accepted"] + ["answered"] * (THREADS - 1)
    store = SQLiteStore.in_data_dir(data_dir)
    assert store.tallies("s")[0] == 1


class FailingStore(SQLiteStore):
    """Fails every transaction holding a report whose body says so, like a full disk would."""

    def add_reports(self, reports: Sequence[NewReport], received_hour: str) -> list[StoreOutcome]:
        if any(r.body.startswith("fail") for r in reports):
            with self._write() as conn:
                conn.execute(
                    "INSERT INTO reports (report_id, survey_id, public_key, body, received_hour) "
                    "VALUES ('partial', 's', 'pk-partial', 'x', 'h')"
                )
                raise sqlite3.OperationalError("disk I/O error")
        return super().add_reports(reports, received_hour)


def test_a_failed_transaction_answers_an_error_never_accepted(data_dir):
    committer = GroupCommitter()
    good: dict[str, StoreOutcome] = {}
    failed: list[str] = []

    def post(i: int) -> None:
        store = FailingStore.in_data_dir(data_dir)
        try:
            for j in range(10):
                rid = f"r{i}-{j}"
                body = "fail" if (i + j) % 3 == 0 else f"body-{rid}"
                sent = NewReport(rid, "s", f"k{i}-{j}", body, {"q": (1,)}, "{}")
                try:
                    (outcome,) = committer.add_reports(store, [sent], "h")
                except StoreError:
                    failed.append(rid)
                else:
                    good[rid] = outcome
        finally:
            store.close()

    run_threads(post)
    assert len(failed) == sum((i + j) % 3 == 0 for i in range(THREADS) for j in range(10))
    store = SQLiteStore.in_data_dir(data_dir)
    stored = {row[0] for row in store.conn.execute("SELECT report_id FROM reports")}
    assert stored == set(good)  # nothing of a failed transaction, every good report
    assert set(good.values()) == {"accepted"}
    assert not stored & set(failed)
    assert store.tallies("s") == (len(good), {"q": [0, len(good)]})


def test_a_lone_failure_raises_store_error_and_the_store_stays_usable(data_dir):
    committer = GroupCommitter()
    store = FailingStore.in_data_dir(data_dir)
    with pytest.raises(StoreError, match="not stored"):
        committer.add_reports(store, [NewReport("x", "s", "k", "fail", {"q": (0,)}, "{}")], "h")
    assert not store.conn.in_transaction
    assert committer.add_reports(store, [report("y", "k2")], "h") == ["accepted"]
    assert committer.add_reports(store, [], "h") == []


def test_reports_of_different_hours_keep_their_own_hour(data_dir):
    committer = GroupCommitter()

    def post(i: int) -> None:
        store = SQLiteStore.in_data_dir(data_dir)
        try:
            committer.add_reports(store, [report(f"r{i}", f"k{i}")], f"hour-{i % 2}")
        finally:
            store.close()

    run_threads(post)
    store = SQLiteStore.in_data_dir(data_dir)
    rows = store.conn.execute("SELECT report_id, received_hour FROM reports").fetchall()
    assert {rid: hour for rid, hour in rows} == {f"r{i}": f"hour-{i % 2}" for i in range(THREADS)}


def test_threads_posting_at_once_through_the_api(app, auth, survey_doc, report_for):
    from deniable.shared import Survey

    client = app.test_client()
    created = client.post("/api/v1/surveys", json=survey_doc, headers=auth)
    survey = Survey.from_dict(created.get_json()["survey"])
    reports = [report_for(survey) for _ in range(THREADS * 8)]
    statuses: dict[str, list[int]] = {}

    def post(i: int) -> None:
        mine = app.test_client()
        for sent in reports[i::THREADS]:
            for _ in range(2):  # each report twice: accepted, then duplicate
                response = mine.post("/api/v1/reports", json=sent)
                statuses.setdefault(sent["report_id"], []).append(response.status_code)

    run_threads(post)
    assert all(sorted(codes) == [200, 201] for codes in statuses.values())
    summary = client.get("/api/v1/surveys", headers=auth).get_json()["surveys"][0]
    assert summary["report_count"] == len(reports)


def test_a_leader_waits_for_an_announced_request_and_commits_both_at_once(data_dir):
    committer = GroupCommitter(max_wait=30.0)
    checked = threading.Event()
    answers: dict[str, list[StoreOutcome]] = {}

    def announced() -> None:
        store = SQLiteStore.in_data_dir(data_dir)
        with committer.arriving() as arrival:
            checked.wait(10)  # still "checking" when the leader starts
            answers["a"] = committer.add_reports(store, [report("a", "ka")], "h", arrival=arrival)
        store.close()

    thread = threading.Thread(target=announced)
    thread.start()
    while committer._arriving == 0:  # the announcement is in
        threading.Event().wait(0.001)
    leader_store = SQLiteStore.in_data_dir(data_dir)
    threading.Timer(0.2, checked.set).start()
    answers["b"] = committer.add_reports(leader_store, [report("b", "kb")], "h")
    thread.join(10)
    assert answers == {"a": ["accepted"], "b": ["accepted"]}
    assert committer.transactions == 1 and committer.tickets == 2
    assert leader_store.tallies("s") == (2, {"q": [0, 2]})


def test_a_request_that_leaves_without_storing_releases_the_leader(data_dir):
    committer = GroupCommitter(max_wait=30.0)
    store = SQLiteStore.in_data_dir(data_dir)
    with committer.arriving():
        pass  # rejected everything, say: never calls add_reports
    done = threading.Event()

    def lead() -> None:
        committer.add_reports(SQLiteStore.in_data_dir(data_dir), [report("c", "kc")], "h")
        done.set()

    with committer.arriving():
        thread = threading.Thread(target=lead)
        thread.start()
        assert not done.wait(0.3)  # waiting for the announced request
    assert done.wait(10)  # which left: the leader goes on long before max_wait
    thread.join(10)
    assert committer._arriving == 0
    assert store.tallies("s")[0] == 1


def test_a_leader_waits_no_longer_than_max_wait(data_dir):
    committer = GroupCommitter(max_wait=0.05)
    store = SQLiteStore.in_data_dir(data_dir)
    with committer.arriving():  # announced, and still checking throughout
        assert committer.add_reports(store, [report("d", "kd")], "h") == ["accepted"]
    assert committer.transactions == 1


def test_a_workers_commits_go_through_one_writer_with_the_large_cache(
    app, auth, survey_doc, report_for
):
    from deniable.aggregator.web.report_endpoint import COMMITTER
    from deniable.shared import Survey

    client = app.test_client()
    created = client.post("/api/v1/surveys", json=survey_doc, headers=auth)
    survey = Survey.from_dict(created.get_json()["survey"])
    for _ in range(3):
        assert client.post("/api/v1/reports", json=report_for(survey)).status_code == 201
    committer = app.extensions[COMMITTER][1]
    writer = committer._writer
    assert isinstance(writer, SQLiteStore) and committer.transactions == 3
    mib = app.config["SQLITE_WRITER_CACHE_MIB"]
    assert mib == 64
    assert writer.conn.execute("PRAGMA cache_size").fetchone()[0] == -1024 * mib
    reader = SQLiteStore.in_data_dir(app.config["DATA_DIR"])
    assert reader.conn.execute("PRAGMA cache_size").fetchone()[0] == -2000  # SQLite's own
    assert reader.tallies(survey.id)[0] == 3


def test_the_writer_cache_setting_is_checked():
    from deniable.aggregator.config import ConfigError, from_env

    with pytest.raises(ConfigError, match="DENIABLE_SQLITE_WRITER_CACHE_MIB"):
        from_env({"DENIABLE_SQLITE_WRITER_CACHE_MIB": "0"})
    assert from_env({"DENIABLE_SQLITE_WRITER_CACHE_MIB": "256"})["SQLITE_WRITER_CACHE_MIB"] == 256


def test_a_writer_that_cannot_open_fails_every_waiting_request_and_leaves_none_hanging(
    data_dir,
):
    attempts: list[int] = []

    def flaky_writer() -> SQLiteStore:
        attempts.append(1)
        if len(attempts) == 1:
            raise StoreError("cannot open the database: disk on fire")
        return SQLiteStore.in_data_dir(data_dir)

    # Every request announces itself first, so the first leader waits for all eight and they
    # share its group, and its failure.
    committer = GroupCommitter(max_wait=30.0, writer=flaky_writer)
    answers: dict[int, object] = {}
    arrivals = [committer.arriving() for _ in range(8)]
    announced = [arrival.__enter__() for arrival in arrivals]

    def post(i: int) -> None:
        store = SQLiteStore.in_data_dir(data_dir)
        try:
            answers[i] = committer.add_reports(
                store, [report(f"w{i}", f"kw{i}")], "h", arrival=announced[i]
            )
        except StoreError as exc:
            answers[i] = exc
        finally:
            arrivals[i].__exit__(None, None, None)
            store.close()

    run_threads(post, 8)  # one deadline: a request left hanging leaves its answer missing
    assert len(answers) == 8
    assert all(isinstance(a, StoreError) and "send them again" in str(a) for a in answers.values())
    assert committer.transactions == 0
    # The writer opens on the next try, and the reports go in when sent again.
    store = SQLiteStore.in_data_dir(data_dir)
    for i in range(8):
        assert committer.add_reports(store, [report(f"w{i}", f"kw{i}")], "h") == ["accepted"]
    assert store.tallies("s")[0] == 8
