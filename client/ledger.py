"""The privacy ledger and outbox: one SQLite file recording every report before it is sent.

One row per (server, survey): the survey's hash, title and epsilon, the signed report, and its
status (pending, sent or rejected); a pending report the server asked to send later keeps the
time it may be sent again (retry_at). A row's epsilon is what its report spends: the epsilons
of the randomized questions it holds (`charged`; a question the plain answers skipped costs
nothing). The epsilon spent is the sum over rows; a re-send costs nothing. Writers take the database lock with BEGIN IMMEDIATE before reading what they decide
on, so two processes answering the same survey at once cannot both randomize it.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from deniable.client.errors import ClientError
from deniable.client.keys import ensure_private_dir
from deniable.client.receipt import LedgerEntry
from deniable.client.urls import same_server
from deniable.shared.route import Route
from deniable.shared.survey import Survey

SCHEMA_VERSION = 3
LEDGER_FILE = "ledger.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reports (
    server      TEXT NOT NULL,
    survey      TEXT NOT NULL,
    survey_hash TEXT NOT NULL,
    title       TEXT NOT NULL,
    epsilon     REAL NOT NULL,
    report_id   TEXT NOT NULL UNIQUE,
    report      TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'rejected')),
    result      TEXT,
    reason      TEXT,
    attempts    INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    retry_at    TEXT,
    relay       TEXT,
    ohttp_keys  TEXT,
    PRIMARY KEY (server, survey)
);
CREATE INDEX IF NOT EXISTS reports_status ON reports (status);
"""


def utc_now(later: float = 0) -> str:
    """Now (or `later` seconds from now), in UTC, to the second (the ledger is local: it may
    be precise)."""
    return (datetime.now(UTC) + timedelta(seconds=later)).strftime("%Y-%m-%dT%H:%M:%SZ")


def charged(survey: Survey, report: Mapping[str, Any]) -> float:
    """What a report to `survey` spends: the sum of the epsilons of the randomized questions
    it holds. A question the respondent's plain answers skipped is not in it and costs nothing,
    nor one asked directly (a split ballot's direct arm, sent as given like a plain answer);
    `survey.epsilon` is the most a report can spend."""
    return survey.epsilon_of(report["answers"], report.get("arms"))


@dataclass(frozen=True)
class StoredReport:
    """A ledger row with its signed report parsed."""

    entry: LedgerEntry
    report: dict[str, Any]
    result: str | None
    #: The relay and key the report goes through (docs/anonymity.md), None: straight.
    route: Route | None = None


class Transaction:
    """Reads and writes inside one BEGIN IMMEDIATE transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get(self, server: str, survey: str) -> StoredReport | None:
        """The stored report for a survey on a server, if any."""
        return _find(self.conn, server, survey)

    def spent(self) -> float:
        """Total epsilon over every survey answered on this device."""
        return _spent(self.conn)

    def record(self, server: str, survey: Survey, report: dict[str, Any]) -> None:
        """Record a new signed report to `survey` as pending, charged what it spends."""
        self.insert(server, survey.title, charged(survey, report), report, route=survey.route)

    def insert(
        self,
        server: str,
        title: str,
        epsilon: float,
        report: dict[str, Any],
        *,
        route: Route | None = None,
    ) -> None:
        """Record a new signed report as pending (committed when the transaction ends), with
        the route its survey names: a report waiting in the outbox goes through the relay too."""
        now = utc_now()
        self.conn.execute(
            "INSERT INTO reports (server, survey, survey_hash, title, epsilon, report_id, report,"
            " status, created_at, updated_at, relay, ohttp_keys)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?)",
            (
                server,
                report["survey"],
                report["survey_hash"],
                title,
                float(epsilon),
                report["report_id"],
                json.dumps(report, sort_keys=True),
                now,
                now,
                route.relay if route else None,
                route.ohttp_keys if route else None,
            ),
        )


class Ledger:
    """The SQLite ledger under a data directory (created 0700 on first use)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / LEDGER_FILE

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            ensure_private_dir(self.data_dir)
            if not self.path.exists():  # readable by this user only, like the keys
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise ClientError(f"cannot open the ledger {self.path}: {exc}") from None
        with closing(conn):
            conn.row_factory = sqlite3.Row
            deadline = time.monotonic() + 30.0
            while True:
                try:
                    self._prepare(conn)
                    break
                except sqlite3.OperationalError as exc:
                    # Switching to WAL does not wait on the busy timeout while another
                    # process creates the ledger: retry until that one is done.
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise ClientError(f"cannot use the ledger {self.path}: {exc}") from None
                    time.sleep(0.02)
                except sqlite3.Error as exc:
                    raise ClientError(f"cannot use the ledger {self.path}: {exc}") from None
            try:
                yield conn
            except sqlite3.IntegrityError:
                raise  # the schema's own guard (one report per survey), for the caller
            except sqlite3.Error as exc:  # a damaged file, a full disk
                raise ClientError(f"cannot use the ledger {self.path}: {exc}") from None

    @staticmethod
    def _prepare(conn: sqlite3.Connection) -> None:
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
            conn.execute("BEGIN IMMEDIATE")
            if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                columns = {row[1] for row in conn.execute("PRAGMA table_info(reports)")}
                if "retry_at" not in columns:  # a ledger of version 1
                    conn.execute("ALTER TABLE reports ADD COLUMN retry_at TEXT")
                for column in ("relay", "ohttp_keys"):  # a ledger of version 2: no routes
                    if column not in columns:
                        conn.execute(f"ALTER TABLE reports ADD COLUMN {column} TEXT")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on any exception)."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield Transaction(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def get(self, server: str, survey: str) -> StoredReport | None:
        """The stored report for a survey on a server, if any."""
        with self._connect() as conn:
            return _find(conn, server, survey)

    def pending(self) -> list[StoredReport]:
        """Every report still waiting to be sent, oldest first."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT * FROM reports WHERE status = 'pending' ORDER BY created_at, rowid"
            ).fetchall()
        return [_stored(row) for row in rows]

    def entries(self) -> list[LedgerEntry]:
        """Every answered survey, oldest first."""
        with self._connect() as conn:
            rows = conn.execute("SELECT * FROM reports ORDER BY created_at, rowid").fetchall()
        return [_entry(row) for row in rows]

    def spent(self) -> float:
        """Total epsilon over every survey answered on this device."""
        with self._connect() as conn:
            return _spent(conn)

    def replace_report(self, report_id: str, report: dict[str, Any]) -> None:
        """Keep a report signed again (a fresh sent_at) in place of one not yet taken."""
        with self._connect() as conn:
            conn.execute(
                "UPDATE reports SET report = ?, updated_at = ? WHERE report_id = ? "
                "AND status != 'sent'",
                (json.dumps(report, sort_keys=True), utc_now(), report_id),
            )

    def mark(
        self,
        report_id: str,
        status: str,
        result: str | None,
        reason: str | None,
        retry_at: str | None = None,
    ) -> None:
        """Record a send attempt's outcome (and, for a pending report the server asked to send
        later, when it may be sent again)."""
        with self._connect() as conn:
            conn.execute(
                "UPDATE reports SET status = ?, result = ?, reason = ?, attempts = attempts + 1,"
                " updated_at = ?, retry_at = ? WHERE report_id = ?",
                (status, result, reason, utc_now(), retry_at, report_id),
            )


def _spent(conn: sqlite3.Connection) -> float:
    return math.fsum(row[0] for row in conn.execute("SELECT epsilon FROM reports"))


def _entry(row: sqlite3.Row) -> LedgerEntry:
    return LedgerEntry(
        server=row["server"],
        survey=row["survey"],
        title=row["title"],
        survey_hash=row["survey_hash"],
        epsilon=row["epsilon"],
        report_id=row["report_id"],
        status=row["status"],
        reason=row["reason"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        retry_at=row["retry_at"],
    )


def _find(conn: sqlite3.Connection, server: str, survey: str) -> StoredReport | None:
    """The survey's stored report on this server, however its address was spelled when the
    report was stored (one report per survey and server: answering again must not give a
    second, independent randomization to average with the first)."""
    for row in conn.execute("SELECT * FROM reports WHERE survey = ?", (survey,)).fetchall():
        if same_server(row["server"], server):
            return _stored(row)
    return None


def _stored(row: sqlite3.Row) -> StoredReport:
    try:
        report = json.loads(row["report"])
    except (TypeError, ValueError):
        raise ClientError(
            f"the ledger holds a damaged report for survey {row['survey']!r} (not JSON)"
        ) from None
    route = Route(row["relay"], row["ohttp_keys"]) if row["relay"] and row["ohttp_keys"] else None
    return StoredReport(_entry(row), report, row["result"], route)
