"""The store's operations that are the same SQL on every backend, written once.

A backend (SQLite, PostgreSQL) supplies its connections and transactions, its schema and
migrations, the report transaction, and how it reads tallies and report bodies; everything else
(surveys, stored reports, recount and repair, purge, invitations, enrollment) is here, and the
researcher side (accounts and tokens, roles, the audit log, dashboard sessions) in
sql_people.py, mixed in.
Queries use `?` placeholders; a backend whose driver wants another style rewrites them in `_sql`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from abc import abstractmethod
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from deniable.aggregator.store.base import (
    PURGED_BODY,
    BodyCounter,
    EnrollOutcome,
    Recount,
    Store,
    StoredReport,
    StoreError,
    SurveyRecord,
)
from deniable.aggregator.store.gateway import GatewayRecords
from deniable.aggregator.store.sql_people import SQLPeople
from deniable.shared.errors import DeniableError
from deniable.shared.report import body_patterns
from deniable.shared.survey import Survey

#: A DB-API connection as both drivers offer it: `execute` returns a cursor.
Connection = Any


def support_by_question(rows: Iterable[Sequence[Any]]) -> dict[str, list[int]]:
    """Rows (question_id, option_index, support) in option order -> question id -> supports."""
    support: dict[str, list[int]] = {}
    for qid, _, value in rows:
        support.setdefault(qid, []).append(value)
    return support


def pattern_digest(pattern: str) -> bytes:
    """The key of an answer pattern's row: 16 bytes of its BLAKE2b (a pattern may be long)."""
    return hashlib.blake2b(pattern.encode("utf-8"), digest_size=16).digest()


def stored_patterns(resolved: str, bodies: Iterable[str]) -> Counter[str]:
    """The answer patterns of a survey's stored bodies (`resolved`: its stored document), for
    the migration that counts those already stored (either backend's). A body is canonical
    JSON of a report checked when it arrived, so nothing is checked again; a stored survey
    that no longer parses takes no report, and gets no pattern."""
    rest = iter(bodies)
    first = next(rest, None)
    if first is None:
        return Counter()
    try:
        pattern_of = body_patterns(Survey.from_stored(json.loads(resolved)))
    except (ValueError, DeniableError):
        return Counter()
    return Counter(pattern_of(body) for body in itertools.chain([first], rest))


class _Rollback(Exception):
    """Raised inside a write transaction to undo it and answer `outcome`."""

    def __init__(self, outcome: str):
        self.outcome = outcome


class SQLStore(SQLPeople, GatewayRecords, Store):
    """The Store over a SQL database: shared statements, backend hooks."""

    #: A survey row in SurveyRecord's order; a backend may compute report_count.
    SURVEY_COLUMNS = "id, resolved, hash, created_at, closed_at, report_count"
    #: The survey's n as stored (a backend with counter shards adds them).
    REPORT_COUNT = "report_count"

    # what a backend supplies
    @abstractmethod
    def _query(self) -> AbstractContextManager[Connection]:
        """A connection for single statements (each its own snapshot)."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Connection]:
        """One consistent, read-only snapshot."""

    @abstractmethod
    def _write(self) -> AbstractContextManager[Connection]:
        """One write transaction: committed at the end, rolled back on any exception."""

    @abstractmethod
    def _bodies(self, conn: Connection, where: str, args: Sequence[object]) -> Iterator[str]:
        """Report bodies matching `where` (`?` placeholders) in arrival order, streamed."""

    @abstractmethod
    def _stored_tallies(self, conn: Connection, survey_id: str) -> dict[str, list[int]]:
        """The survey's tallies as stored (question id -> support per option)."""

    @abstractmethod
    def _stored_patterns(self, conn: Connection, survey_id: str) -> dict[str, int]:
        """The survey's answer patterns as stored (pattern -> reports, none at zero)."""

    def _sql(self, query: str) -> str:
        """The statement in the driver's placeholder style."""
        return query

    def _executemany(self, conn: Connection, query: str, rows: Sequence[Sequence[object]]) -> None:
        conn.cursor().executemany(self._sql(query), rows)

    def _lock_survey(self, conn: Connection, survey_id: str) -> None:
        """Before a repair or purge: make report writers of the survey wait (if they can run
        beside this transaction at all)."""

    def _before_repair(self, conn: Connection, survey_id: str) -> None:
        """Before the stored n and tallies are replaced (e.g. fold counter shards)."""

    def _run(self, conn: Connection, query: str, args: Sequence[object] = ()) -> Any:
        return conn.execute(self._sql(query), args)

    def _exists(self, conn: Connection, table: str, row_id: object) -> bool:
        """Whether `table` has a row of this id."""
        return (
            self._run(conn, f"SELECT 1 FROM {table} WHERE id = ?", (row_id,)).fetchone() is not None
        )

    def _one(self, query: str, args: Sequence[object] = ()) -> tuple | None:
        with self._query() as conn:
            return self._run(conn, query, args).fetchone()

    # surveys
    def create_survey(
        self,
        survey_id: str,
        resolved_json: str,
        survey_hash: str,
        questions: Mapping[str, int],
        now: str,
        owner: int | None = None,
    ) -> bool:
        with self._write() as conn:
            created = self._run(
                conn,
                "INSERT INTO surveys (id, resolved, hash, created_at, report_count) "
                "VALUES (?, ?, ?, ?, 0) ON CONFLICT DO NOTHING RETURNING id",
                (survey_id, resolved_json, survey_hash, now),
            ).fetchall()  # all: SQLite finishes the statement only once its rows are read
            if not created:
                return False
            self._executemany(
                conn,
                "INSERT INTO tallies (survey_id, question_id, option_index, support) "
                "VALUES (?, ?, ?, 0)",
                [(survey_id, qid, i) for qid, k in questions.items() for i in range(k)],
            )
            if owner is not None:
                self._grant(conn, survey_id, owner, "owner", now)
        return True

    def get_survey(self, survey_id: str) -> SurveyRecord | None:
        row = self._one(f"SELECT {self.SURVEY_COLUMNS} FROM surveys WHERE id = ?", (survey_id,))
        return SurveyRecord(*row) if row else None

    def list_surveys(self) -> list[SurveyRecord]:
        with self._query() as conn:
            rows = self._run(
                conn, f"SELECT {self.SURVEY_COLUMNS} FROM surveys ORDER BY created_at, id"
            ).fetchall()
        return [SurveyRecord(*row) for row in rows]

    def close_survey(self, survey_id: str, now: str) -> SurveyRecord | None:
        with self._write() as conn:
            self._run(
                conn,
                "UPDATE surveys SET closed_at = ? WHERE id = ? AND closed_at IS NULL",
                (now, survey_id),
            )
        return self.get_survey(survey_id)

    # reports
    def stored_report(self, report_id: str) -> StoredReport | None:
        row = self._one(
            "SELECT body, public_key, survey_id FROM reports WHERE report_id = ?", (report_id,)
        )
        return StoredReport(*row) if row else None

    def pattern_counts(self, survey_id: str) -> dict[str, int]:
        with self._read() as conn:
            return self._stored_patterns(conn, survey_id)

    @abstractmethod
    def _replace_patterns(
        self, conn: Connection, survey_id: str, patterns: Mapping[str, int]
    ) -> None:
        """Make the survey's stored answer pattern counts these (under its write lock)."""

    # verification and retention
    def _recount(self, conn: Connection, survey_id: str, count: BodyCounter) -> Recount:
        row = self._run(
            conn,
            f"SELECT {self.REPORT_COUNT}, purged_count FROM surveys WHERE id = ?",
            (survey_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"no survey {survey_id!r}")
        stored = self._stored_tallies(conn, survey_id)
        purged = support_by_question(
            self._run(
                conn,
                "SELECT question_id, option_index, support FROM purged_tallies "
                "WHERE survey_id = ? ORDER BY question_id, option_index",
                (survey_id,),
            ).fetchall()
        )
        n, counted, patterns = count(
            self._bodies(conn, "survey_id = ? AND body <> ''", (survey_id,))
        )
        total = {
            qid: [c + p for c, p in zip(counts, purged.get(qid, [0] * len(counts)), strict=True)]
            for qid, counts in counted.items()
        }
        return Recount(
            row[0],
            stored,
            n + row[1],
            total,
            row[1],
            self._stored_patterns(conn, survey_id),
            {pattern: n for pattern, n in patterns.items() if n},
        )

    def recount(self, survey_id: str, count: BodyCounter, *, repair: bool = False) -> Recount:
        if not repair:
            with self._read() as conn:
                return self._recount(conn, survey_id, count)
        with self._write() as conn:
            self._lock_survey(conn, survey_id)
            found = self._recount(conn, survey_id, count)
            if not found.consistent:
                self._before_repair(conn, survey_id)
                self._run(
                    conn,
                    "UPDATE surveys SET report_count = ? WHERE id = ?",
                    (found.counted_n, survey_id),
                )
                self._executemany(
                    conn,
                    "UPDATE tallies SET support = ? "
                    "WHERE survey_id = ? AND question_id = ? AND option_index = ?",
                    [
                        (value, survey_id, qid, option)
                        for qid, counts in found.counted.items()
                        for option, value in enumerate(counts)
                    ],
                )
                if found.stored_patterns != found.counted_patterns:
                    self._replace_patterns(conn, survey_id, found.counted_patterns)
        return found

    def purge_reports(self, survey_id: str, before_hour: str, count: BodyCounter) -> int:
        where = "survey_id = ? AND received_hour < ? AND body <> ''"
        with self._write() as conn:
            self._lock_survey(conn, survey_id)
            n, support, patterns = count(self._bodies(conn, where, (survey_id, before_hour)))
            if n == 0:
                return 0
            kept = self._stored_patterns(conn, survey_id)
            for pattern, purged in patterns.items():
                kept[pattern] = kept.get(pattern, 0) - purged
            self._replace_patterns(conn, survey_id, kept)
            self._executemany(
                conn,
                "INSERT INTO purged_tallies (survey_id, question_id, option_index, support) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (survey_id, question_id, option_index) "
                "DO UPDATE SET support = purged_tallies.support + excluded.support",
                [
                    (survey_id, qid, option, value)
                    for qid, counts in support.items()
                    for option, value in enumerate(counts)
                ],
            )
            self._run(
                conn,
                "UPDATE surveys SET purged_count = purged_count + ? WHERE id = ?",
                (n, survey_id),
            )
            self._run(
                conn,
                f"UPDATE reports SET body = ? WHERE {where}",
                (PURGED_BODY, survey_id, before_hour),
            )
        return n

    # invite-only surveys
    def add_invitations(self, survey_id: str, code_hashes: Sequence[str], now: str) -> None:
        with self._write() as conn:
            self._executemany(
                conn,
                "INSERT INTO invitations (hash, survey_id, used, created_at) VALUES (?, ?, 0, ?)",
                [(h, survey_id, now) for h in code_hashes],
            )

    def enroll(self, survey_id: str, public_key: str, code_hash: str) -> EnrollOutcome:
        try:
            with self._write() as conn:
                if not self._run(
                    conn,
                    "INSERT INTO enrollments (survey_id, public_key) VALUES (?, ?) "
                    "ON CONFLICT DO NOTHING RETURNING 1",
                    (survey_id, public_key),
                ).fetchall():
                    raise _Rollback("already")
                if self._run(
                    conn,
                    "UPDATE invitations SET used = 1 "
                    "WHERE hash = ? AND survey_id = ? AND used = 0 RETURNING 1",
                    (code_hash, survey_id),
                ).fetchall():
                    return "enrolled"
                known = self._run(
                    conn,
                    "SELECT 1 FROM invitations WHERE hash = ? AND survey_id = ?",
                    (code_hash, survey_id),
                ).fetchone()
                raise _Rollback("used-code" if known else "unknown-code")
        except _Rollback as undone:
            return undone.outcome  # type: ignore[return-value]

    def is_enrolled(self, survey_id: str, public_key: str) -> bool:
        row = self._one(
            "SELECT 1 FROM enrollments WHERE survey_id = ? AND public_key = ?",
            (survey_id, public_key),
        )
        return row is not None
