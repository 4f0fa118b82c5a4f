"""The SQLite store: one file under the data directory, WAL, versioned schema migrations.

Each connection runs in driver autocommit mode, and every write section starts with
BEGIN IMMEDIATE: it takes the write lock before reading, so two processes never both read,
then both fail to upgrade a deferred transaction. Readers are never blocked (WAL).
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from deniable.aggregator.store import gateway
from deniable.aggregator.store.base import (
    ARM_PREFIX,
    UNNAMED,
    NewReport,
    StoreError,
    StoreOutcome,
    resend_outcome,
)
from deniable.aggregator.store.sql import (
    SQLStore,
    pattern_digest,
    stored_patterns,
    support_by_question,
)

DB_FILE = "deniable.db"
#: Beside the database file: the lock writers of every process queue on (see _writer_lock).
WRITER_LOCK_SUFFIX = "-writer.lock"


def _schema_1(db: Database) -> None:
    """Surveys, reports, tallies, researcher tokens, invitations and enrollments."""
    db["surveys"].create(
        {
            "id": str,
            "resolved": str,
            "hash": str,
            "created_at": str,
            "closed_at": str,
            "report_count": int,
        },
        pk="id",
        not_null={"resolved", "hash", "created_at", "report_count"},
        defaults={"report_count": 0},
    )
    # No IP address, no user agent, and the arrival time only to the hour.
    db["reports"].create(
        {
            "seq": int,
            "report_id": str,
            "survey_id": str,
            "public_key": str,
            "body": str,
            "received_hour": str,
        },
        pk="seq",
        not_null={"report_id", "survey_id", "public_key", "body", "received_hour"},
        foreign_keys=[("survey_id", "surveys", "id")],
    )
    db["reports"].create_index(["report_id"], unique=True, index_name="reports_report_id")
    db["reports"].create_index(
        ["survey_id", "public_key"], unique=True, index_name="reports_one_per_key"
    )
    db["reports"].create_index(["survey_id", "seq"], index_name="reports_by_survey")
    db["tallies"].create(
        {"survey_id": str, "question_id": str, "option_index": int, "support": int},
        pk=("survey_id", "question_id", "option_index"),
        not_null={"support"},
        defaults={"support": 0},
        foreign_keys=[("survey_id", "surveys", "id")],
    )
    db["tokens"].create({"hash": str, "name": str, "created_at": str}, pk="hash")
    # Which code enrolled which key is never stored: codes go to identifiable people.
    db["invitations"].create(
        {"hash": str, "survey_id": str, "used": int, "created_at": str},
        pk="hash",
        not_null={"survey_id", "used"},
        defaults={"used": 0},
        foreign_keys=[("survey_id", "surveys", "id")],
    )
    db["invitations"].create_index(["survey_id"], index_name="invitations_by_survey")
    db["enrollments"].create(
        {"survey_id": str, "public_key": str},
        pk=("survey_id", "public_key"),
        foreign_keys=[("survey_id", "surveys", "id")],
    )


#: Bytes per page of a new database file: SQLite's default, 4 KiB. Each report lands at a random
#: place in two unique indexes (report_id; survey and key), so a commit writes a WAL frame of a
#: page for nearly every index entry it adds once a survey is large, and for every page a small
#: commit touches: larger pages write more bytes for the same entries. Measured with
#: store.add_reports on one connection, 16 KiB pages were cheaper only for 500-report batches on
#: tables under ~150k reports (9 against 15 us a report at 40k), and dearer past ~200k (43-44
#: against 37-39 us at 400-480k) and for commits of 4 reports at every size (79-106 against
#: 66-89 us); under gunicorn, 4 KiB pages cut the kernel time of single reports by ~20%.
PAGE_SIZE = 4096

#: Tally rows one UPDATE ... FROM (VALUES ...) statement increments at most (4 parameters each).
_SUPPORT_CHUNK = 200
#: Below this many rows, one prepared UPDATE per row (executemany) is cheaper: the VALUES
#: statement's text changes with its row count, so it is prepared again for each size.
_SUPPORT_ROW_BY_ROW = 64


def _add_support(conn: sqlite3.Connection, increments: Mapping[tuple[str, str, int], int]) -> None:
    """Add the increments to their tally rows: row by row when few, else up to _SUPPORT_CHUNK
    rows per statement."""
    if len(increments) < _SUPPORT_ROW_BY_ROW:
        conn.executemany(
            "UPDATE tallies SET support = support + ? "
            "WHERE survey_id = ? AND question_id = ? AND option_index = ?",
            [(n, sid, qid, option) for (sid, qid, option), n in increments.items()],
        )
        return
    rows = [(sid, qid, option, n) for (sid, qid, option), n in increments.items()]
    for start in range(0, len(rows), _SUPPORT_CHUNK):
        chunk = rows[start : start + _SUPPORT_CHUNK]
        values = ", ".join(["(?, ?, ?, ?)"] * len(chunk))
        conn.execute(
            "UPDATE tallies SET support = support + v.column4 "
            f"FROM (VALUES {values}) AS v WHERE tallies.survey_id = v.column1 "
            "AND tallies.question_id = v.column2 AND tallies.option_index = v.column3",
            [value for row in chunk for value in row],
        )


def _schema_2(db: Database) -> None:
    """Retention: per survey, the number and the tallies of reports whose bodies were purged."""
    db.conn.execute("ALTER TABLE surveys ADD COLUMN purged_count INTEGER NOT NULL DEFAULT 0")
    db["purged_tallies"].create(
        {"survey_id": str, "question_id": str, "option_index": int, "support": int},
        pk=("survey_id", "question_id", "option_index"),
        not_null={"support"},
        defaults={"support": 0},
        foreign_keys=[("survey_id", "surveys", "id")],
    )


def _schema_3(db: Database) -> None:
    """Dashboard sessions, server-side (see sessions.py in the web package): the sha256 of the
    random id the cookie holds, the stored hash of the token that opened it, and its times.

    No foreign key to tokens (a later migration may rebuild that table, e.g. to give tokens an
    id); removing a token deletes its sessions, and a lookup joins tokens. Sessions are
    disposable: a later migration may tie them to a token id, or drop them all (everyone logs
    in again), rather than convert them."""
    db["sessions"].create(
        {"hash": str, "token_hash": str, "created_at": str, "expires_at": str},
        pk="hash",
        not_null={"token_hash", "created_at", "expires_at"},
    )
    db["sessions"].create_index(["token_hash"], index_name="sessions_by_token")
    db["sessions"].create_index(["expires_at"], index_name="sessions_by_expiry")


#: Accounts, tokens with an id, an owner and limits, roles on surveys and the audit log
#: (docs/accounts.md). An upgraded database gets one admin account per distinct token name,
#: each token becoming that account's token, unlimited: everyone keeps what they could do, and
#: sessions (tied to token hashes, which stay) keep working.
_SCHEMA_4 = (
    """CREATE TABLE accounts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL UNIQUE,
        admin INTEGER NOT NULL,
        created_at TEXT NOT NULL)""",
    f"""INSERT INTO accounts (name, admin, created_at)
        SELECT coalesce(nullif(name, ''), '{UNNAMED}'), 1,
               coalesce(min(created_at), strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
          FROM tokens GROUP BY 1 ORDER BY 3, 1""",
    """CREATE TABLE tokens_4 (
        id TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        account_id INTEGER NOT NULL REFERENCES accounts (id),
        name TEXT,
        created_at TEXT,
        expires_at TEXT,
        read_only INTEGER NOT NULL DEFAULT 0,
        surveys TEXT,
        revoked_at TEXT)""",
    f"""INSERT INTO tokens_4 (id, hash, account_id, name, created_at, read_only)
        SELECT substr(t.hash, 1, 12), t.hash, a.id, a.name, t.created_at, 0
          FROM tokens t JOIN accounts a ON a.name = coalesce(nullif(t.name, ''), '{UNNAMED}')""",
    "DROP TABLE tokens",
    "ALTER TABLE tokens_4 RENAME TO tokens",
    "CREATE INDEX tokens_by_account ON tokens (account_id)",
    "CREATE INDEX tokens_by_name ON tokens (name)",
    """CREATE TABLE grants (
        survey_id TEXT NOT NULL REFERENCES surveys (id),
        account_id INTEGER NOT NULL REFERENCES accounts (id),
        role TEXT NOT NULL CHECK (role IN ('owner', 'analyst')),
        granted_at TEXT NOT NULL,
        PRIMARY KEY (survey_id, account_id))""",
    "CREATE INDEX grants_by_account ON grants (account_id)",
    # AUTOINCREMENT: a purged entry's seq is never used again, so the order stays the log's.
    """CREATE TABLE audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        time TEXT NOT NULL,
        account TEXT NOT NULL,
        token_id TEXT,
        survey TEXT,
        action TEXT NOT NULL,
        params TEXT NOT NULL DEFAULT '{}')""",
    "CREATE INDEX audit_by_survey ON audit (survey, seq)",
    "CREATE INDEX audit_by_time ON audit (time)",
)


def _schema_4(db: Database) -> None:
    """Accounts, tokens rebuilt with an id and their account, grants and the audit log."""
    for statement in _SCHEMA_4:
        db.conn.execute(statement)


#: Answer patterns (shared/report.py): each distinct pattern of a survey once, with an id, and
#: its count in a narrow table of its own. A batch of reports rewrites only count rows, about
#: 400 to a page, not the patterns' text: several times less to write to the WAL. Writers
#: remember the ids; a purge or repair that deletes patterns (their reports all gone) raises the
#: survey's patterns_generation, and a writer that sees it changed forgets the survey's ids.
_SCHEMA_5 = (
    "ALTER TABLE surveys ADD COLUMN patterns_generation INTEGER NOT NULL DEFAULT 0",
    """CREATE TABLE answer_patterns (
        id INTEGER PRIMARY KEY,
        survey_id TEXT NOT NULL REFERENCES surveys (id),
        digest BLOB NOT NULL,
        pattern TEXT NOT NULL)""",
    "CREATE UNIQUE INDEX answer_patterns_by_digest ON answer_patterns (survey_id, digest)",
    # pattern: answer_patterns.id (no foreign key: checking it would cost every increment)
    "CREATE TABLE pattern_counts (pattern INTEGER PRIMARY KEY, reports INTEGER NOT NULL)",
)


def _pattern_id(conn: sqlite3.Connection, survey_id: str, pattern: str) -> int:
    """The id of the survey's answer pattern, its row made if new."""
    digest = pattern_digest(pattern)
    row = conn.execute(
        "INSERT INTO answer_patterns (survey_id, digest, pattern) VALUES (?, ?, ?) "
        "ON CONFLICT DO NOTHING RETURNING id",
        (survey_id, digest, pattern),
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT id FROM answer_patterns WHERE survey_id = ? AND digest = ?",
            (survey_id, digest),
        ).fetchone()
    return row[0]


def _schema_5(db: Database) -> None:
    """Per survey, how many kept reports have each answer pattern, counted here for the
    reports already stored; from now on each report transaction adds its own."""
    for statement in _SCHEMA_5:
        db.conn.execute(statement)
    surveys = db.conn.execute("SELECT id, resolved FROM surveys ORDER BY id").fetchall()
    for survey_id, resolved in surveys:
        bodies = (
            body
            for (body,) in db.conn.execute(
                "SELECT body FROM reports WHERE survey_id = ? AND body != ''", (survey_id,)
            )
        )
        found = stored_patterns(resolved, bodies)
        db.conn.executemany(
            "INSERT INTO pattern_counts (pattern, reports) VALUES (?, ?)",
            [(_pattern_id(db.conn, survey_id, p), n) for p, n in sorted(found.items())],
        )


def _schema_6(db: Database) -> None:
    """The OHTTP gateway's keys and its relay batches' counts (store/gateway.py)."""
    for statement in gateway.SCHEMA:
        db.conn.execute(statement)


#: Pattern ids a store remembers at most (then it forgets them and asks the database again).
PATTERN_IDS_KEPT = 1_000_000

#: Ordered schema migrations; the database's PRAGMA user_version counts those applied.
MIGRATIONS: tuple[Callable[[Database], None], ...] = (
    _schema_1,
    _schema_2,
    _schema_3,
    _schema_4,
    _schema_5,
    _schema_6,
)


class SQLiteStore(SQLStore):
    """The Store on one SQLite file; one instance per thread (connections are not shared)."""

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: int = 10_000,
        synchronous: str = "FULL",
        cache_mib: int | None = None,
    ):
        self.path = Path(path)
        try:
            # Lent to one thread at a time by the app's pool, so not bound to its first thread.
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                timeout=busy_timeout / 1000,
                check_same_thread=False,
            )
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout)}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            if cache_mib:
                conn.execute(f"PRAGMA cache_size = {-1024 * int(cache_mib)}")
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a new file's only: no-op later
            self.db = Database(conn, execute_plugins=False)
            self.db.enable_wal()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database {self.path}: {exc}") from None
        self.conn = conn
        self._lock_path = self.path.with_name(self.path.name + WRITER_LOCK_SUFFIX)
        self._lock_fd: int | None = None
        # survey -> (its patterns_generation, answer pattern -> its row's id): see _SCHEMA_5.
        self._pattern_ids: dict[str, tuple[int, dict[str, int]]] = {}

    @classmethod
    def in_data_dir(cls, data_dir: str | Path, **options: object) -> SQLiteStore:
        """The store in `data_dir` (created if missing)."""
        directory = Path(data_dir)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the data directory {directory}: {exc.strerror}; "
                "set DENIABLE_DATA_DIR to a writable directory"
            ) from None
        return cls(directory / DB_FILE, **options)  # type: ignore[arg-type]

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._writer_lock():
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            try:
                self.conn.execute("COMMIT")
            except BaseException:
                # Not committed: leave the connection usable (no transaction left open).
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    @contextmanager
    def _writer_lock(self) -> Iterator[None]:
        """Hold the lock file while writing, so writers of other processes queue on it.

        SQLite's own busy handler sleeps 1, 2, 5, 10... ms between retries, which makes a
        writer that finds the database locked wait far longer than the transaction holding
        it; a blocked flock wakes the moment the holder releases it. A process that does not
        take this lock (the sqlite3 shell, say) still meets busy_timeout."""
        if self._lock_fd is None:
            self._lock_fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    @contextmanager
    def _query(self) -> Iterator[sqlite3.Connection]:
        yield self.conn

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN")
        try:
            yield self.conn
        finally:
            if self.conn.in_transaction:
                self.conn.execute("COMMIT")

    # lifecycle
    def schema_version(self) -> int:
        """The number of migrations applied to this database."""
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def migrate(self) -> int:
        if self.schema_version() == len(MIGRATIONS):
            return len(MIGRATIONS)  # up to date: no write lock, so readers never wait on writers
        with self._write():
            version = self.schema_version()
            if version > len(MIGRATIONS):
                raise StoreError(
                    f"the database {self.path} has schema version {version}, newer than this "
                    f"aggregator knows ({len(MIGRATIONS)}); upgrade deniable"
                )
            for number in range(version, len(MIGRATIONS)):
                MIGRATIONS[number](self.db)
                self.conn.execute(f"PRAGMA user_version = {number + 1}")
        return len(MIGRATIONS)

    def ping(self) -> None:
        try:
            self.conn.execute("SELECT count(*) FROM surveys").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"database check failed: {exc}") from None

    def close(self) -> None:
        self.conn.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # reports
    def add_reports(self, reports: Sequence[NewReport], received_hour: str) -> list[StoreOutcome]:
        outcomes: list[StoreOutcome] = []
        if not reports:
            return outcomes
        per_question: dict[tuple[str, str], Counter[int]] = {}
        added: Counter[str] = Counter()
        patterns: Counter[tuple[str, str]] = Counter()
        learned: dict[str, tuple[int, dict[str, int], dict[str, int]]] = {}
        with self._write() as conn:
            open_surveys: dict[str, bool] = {}
            for report in reports:
                sid = report.survey_id
                if sid not in open_surveys:
                    row = conn.execute(
                        "SELECT closed_at, patterns_generation FROM surveys WHERE id = ?", (sid,)
                    ).fetchone()
                    open_surveys[sid] = row is not None and row[0] is None
                    if row is not None:
                        learned[sid] = self._known_patterns(sid, row[1])
                if not open_surveys[sid]:
                    outcomes.append(self._seen_before(report) or "closed")
                    continue
                try:
                    conn.execute(
                        "INSERT INTO reports (report_id, survey_id, public_key, body, received_hour) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (report.report_id, sid, report.public_key, report.body, received_hour),
                    )
                except sqlite3.IntegrityError:
                    # The statement alone is undone; the batch's transaction goes on.
                    seen = self._seen_before(report) or self._answered(report)
                    if seen is None:
                        raise
                    outcomes.append(seen)
                    continue
                outcomes.append("accepted")
                added[sid] += 1
                patterns[sid, report.pattern] += 1
                for qid, options in report.support.items():
                    counted = per_question.get((sid, qid))
                    if counted is None:
                        counted = per_question[(sid, qid)] = Counter()
                    # Counter.update counts in C: a sketch answer supports hundreds of
                    # counters, and this runs while the write lock is held.
                    counted.update(options)
            increments = {
                (sid, qid, option): n
                for (sid, qid), counted in per_question.items()
                for option, n in counted.items()
            }
            _add_support(conn, increments)
            self._count_patterns(conn, patterns, learned)
            conn.executemany(
                "UPDATE surveys SET report_count = report_count + ? WHERE id = ?",
                [(n, sid) for sid, n in added.items()],
            )
        # Committed: the new ids are the database's now (a rolled back transaction's could go
        # to other patterns later).
        for sid, (generation, known, new) in learned.items():
            known.update(new)
            self._pattern_ids[sid] = (generation, known)
        if sum(len(ids) for _, ids in self._pattern_ids.values()) > PATTERN_IDS_KEPT:
            self._pattern_ids.clear()
        return outcomes

    def _known_patterns(
        self, survey_id: str, generation: int
    ) -> tuple[int, dict[str, int], dict[str, int]]:
        """(generation, the pattern ids remembered for the survey if of that generation, an
        empty dict for the ids a transaction learns)."""
        known_generation, known = self._pattern_ids.get(survey_id, (generation, {}))
        return generation, known if known_generation == generation else {}, {}

    def _count_patterns(
        self,
        conn: sqlite3.Connection,
        patterns: Mapping[tuple[str, str], int],
        learned: dict[str, tuple[int, dict[str, int], dict[str, int]]],
    ) -> None:
        """Add a batch's reports to their answer patterns' counts: a new pattern gets its row
        (its id into the survey's `learned`), then one count row per pattern is raised."""
        rows = []
        for (sid, pattern), n in patterns.items():
            _, known, new = learned[sid]
            pattern_id = known.get(pattern) or new.get(pattern)
            if pattern_id is None:
                pattern_id = new[pattern] = _pattern_id(conn, sid, pattern)
            rows.append((pattern_id, n))
        conn.executemany(
            "INSERT INTO pattern_counts (pattern, reports) VALUES (?, ?) "
            "ON CONFLICT (pattern) DO UPDATE SET reports = reports + excluded.reports",
            rows,
        )

    def _seen_before(self, report: NewReport) -> StoreOutcome | None:
        stored = self.stored_report(report.report_id)
        if stored is None:
            return None
        return resend_outcome(stored, report.body, report.public_key, report.survey_id)

    def _answered(self, report: NewReport) -> StoreOutcome | None:
        row = self.conn.execute(
            "SELECT 1 FROM reports WHERE survey_id = ? AND public_key = ?",
            (report.survey_id, report.public_key),
        ).fetchone()
        return "answered" if row else None

    def tallies(self, survey_id: str) -> tuple[int, dict[str, list[int]]]:
        with self._read() as conn:
            row = conn.execute(
                "SELECT report_count FROM surveys WHERE id = ?", (survey_id,)
            ).fetchone()
            support = self._stored_tallies(conn, survey_id)
        return (row[0] if row else 0), support

    def iter_report_bodies(self, survey_id: str, *, chunk: int = 1000) -> Iterator[str]:
        last = 0
        while True:
            rows = self.conn.execute(
                "SELECT seq, body FROM reports WHERE survey_id = ? AND seq > ? AND body != '' "
                "ORDER BY seq LIMIT ?",
                (survey_id, last, chunk),
            ).fetchall()
            if not rows:
                return
            for _, body in rows:
                yield body
            last = rows[-1][0]

    def iter_answer_counts(
        self, survey_id: str, question_ids: Sequence[str]
    ) -> Iterator[tuple[tuple[Any, ...], int]]:
        # One json_extract with every path returns a JSON array (one path: the value itself);
        # an id ARM_PREFIX + qid asks for a split-ballot question's arm (stats/analyze.py).
        paths = ", ".join(
            f"'$.arms.\"{qid[len(ARM_PREFIX) :]}\"'"
            if qid.startswith(ARM_PREFIX)
            else f"'$.answers.\"{qid}\"'"
            for qid in question_ids
        )
        # The cursor is read as the caller goes.
        rows = self.conn.execute(
            f"SELECT json_extract(p.pattern, {paths}) AS answers, sum(c.reports) "
            "FROM answer_patterns p JOIN pattern_counts c ON c.pattern = p.id "
            "WHERE p.survey_id = ? GROUP BY answers",
            (survey_id,),
        )
        if len(question_ids) == 1:
            for answers, n in rows:
                yield (answers,), n
        else:
            for answers, n in rows:
                yield tuple(json.loads(answers)), n

    def _stored_patterns(self, conn: sqlite3.Connection, survey_id: str) -> dict[str, int]:
        return dict(
            conn.execute(
                "SELECT p.pattern, c.reports FROM answer_patterns p "
                "JOIN pattern_counts c ON c.pattern = p.id "
                "WHERE p.survey_id = ? AND c.reports > 0",
                (survey_id,),
            )
        )

    def _replace_patterns(
        self, conn: sqlite3.Connection, survey_id: str, patterns: Mapping[str, int]
    ) -> None:
        # Every pattern row goes, the text of those no kept report has too; writers that
        # remember ids see the generation change (see _SCHEMA_5).
        conn.execute(
            "DELETE FROM pattern_counts WHERE pattern IN "
            "(SELECT id FROM answer_patterns WHERE survey_id = ?)",
            (survey_id,),
        )
        conn.execute("DELETE FROM answer_patterns WHERE survey_id = ?", (survey_id,))
        conn.execute(
            "UPDATE surveys SET patterns_generation = patterns_generation + 1 WHERE id = ?",
            (survey_id,),
        )
        conn.executemany(
            "INSERT INTO pattern_counts (pattern, reports) VALUES (?, ?)",
            [(_pattern_id(conn, survey_id, p), n) for p, n in sorted(patterns.items()) if n > 0],
        )

    # verification and retention
    def _bodies(
        self, conn: sqlite3.Connection, where: str, args: Sequence[object]
    ) -> Iterator[str]:
        for (body,) in conn.execute(f"SELECT body FROM reports WHERE {where} ORDER BY seq", args):
            yield body

    def _stored_tallies(self, conn: sqlite3.Connection, survey_id: str) -> dict[str, list[int]]:
        return support_by_question(
            conn.execute(
                "SELECT question_id, option_index, support FROM tallies "
                "WHERE survey_id = ? ORDER BY question_id, option_index",
                (survey_id,),
            )
        )

    def backup(self, target: str | Path) -> None:
        """Copy the whole database to `target` while it serves (SQLite's online backup API)."""
        with sqlite3.connect(target) as copy:
            self.conn.backup(copy)
        copy.close()
