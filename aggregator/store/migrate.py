"""Copy an SQLite deployment into PostgreSQL (`deniable-aggregator migrate-store --to URL`).

Every table (surveys, reports, tallies and answer patterns; accounts, tokens, roles and the audit log;
invitations and enrollments) is read in one SQLite read transaction and written in one PostgreSQL transaction
(COPY), so the copy is of one moment and lands whole or not at all. The target must be empty:
copying into a database that already holds surveys or reports could count a report twice.
After the copy, each survey is checked by recounting its tallies and answer patterns from the
copied reports (plus what retention purged) and comparing them, and every table's row count,
with the source.
The command itself is the CLI's (aggregator/cli/maintenance.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deniable.aggregator.store import recount
from deniable.aggregator.store.base import StoreError
from deniable.aggregator.store.sqlite import DB_FILE, SQLiteStore

if TYPE_CHECKING:  # psycopg is an optional extra: imported only when migrating
    from deniable.aggregator.store.postgres import PostgresStore

#: Tables and the columns copied, in an order the foreign keys allow.
COPIED: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "surveys",
        ("id", "resolved", "hash", "created_at", "closed_at", "report_count", "purged_count"),
    ),
    ("tallies", ("survey_id", "question_id", "option_index", "support")),
    ("purged_tallies", ("survey_id", "question_id", "option_index", "support")),
    ("answer_patterns", ("survey_id", "digest", "pattern")),
    ("pattern_shards", ("survey_id", "digest", "reports")),
    ("reports", ("seq", "report_id", "survey_id", "public_key", "body", "received_hour")),
    ("accounts", ("id", "name", "admin", "created_at")),
    (
        "tokens",
        (
            "id",
            "hash",
            "account_id",
            "name",
            "created_at",
            "expires_at",
            "read_only",
            "surveys",
            "revoked_at",
        ),
    ),
    ("grants", ("survey_id", "account_id", "role", "granted_at")),
    ("audit", ("seq", "time", "account", "token_id", "survey", "action", "params")),
    ("invitations", ("hash", "survey_id", "used", "created_at")),
    ("enrollments", ("survey_id", "public_key")),
)

#: Tables read from SQLite by a query of their own: the answer patterns' counts, which SQLite
#: keys by the pattern's id (store/sqlite.py) and PostgreSQL by its survey and digest.
SOURCES: dict[str, str] = {
    "pattern_shards": "SELECT p.survey_id, p.digest, c.reports FROM answer_patterns p "
    "JOIN pattern_counts c ON c.pattern = p.id",
}

#: The copied columns PostgreSQL numbers itself (identity columns): each sequence is moved
#: past the copied numbers.
SEQUENCES: tuple[tuple[str, str], ...] = (("reports", "seq"), ("accounts", "id"), ("audit", "seq"))


@dataclass(frozen=True)
class Copied:
    """What a migration copied: rows per table, and n per survey (all verified)."""

    rows: dict[str, int]
    surveys: dict[str, int]


def migrate(data_dir: Path, url: str, tally: recount.Tally) -> Copied:
    """Copy the SQLite store in `data_dir` into the empty PostgreSQL database at `url`, verified
    by recounting with `tally` (`stats.analyze.tally`)."""
    from deniable.aggregator.store.postgres import PostgresStore, describe

    path = Path(data_dir) / DB_FILE
    if not path.exists():
        raise StoreError(f"no SQLite database at {path}; set DENIABLE_DATA_DIR to the deployment's")
    source = SQLiteStore(path)
    target = PostgresStore(url)
    try:
        source.migrate()
        target.migrate()
        rows = _copy(source, target, describe(url))
        surveys = _verify(source, target, rows, tally)
    finally:
        source.close()
    return Copied(rows, surveys)


def _copy(source: SQLiteStore, target: PostgresStore, where: str) -> dict[str, int]:
    """Every table, in one read transaction and one write transaction; rows per table."""
    rows: dict[str, int] = {}
    with target._tx() as conn:
        held = conn.execute(
            "SELECT (SELECT count(*) FROM surveys) + (SELECT count(*) FROM tokens) "
            "+ (SELECT count(*) FROM accounts) + (SELECT count(*) FROM audit)"
        ).fetchone()[0]
        if held:
            raise StoreError(
                f"{where} already holds surveys, accounts, tokens or an audit log; migrate "
                "into an empty database "
                "(nothing was copied)"
            )
        source.conn.execute("BEGIN")
        try:
            for table, columns in COPIED:
                names = ", ".join(columns)
                count = 0
                query = SOURCES.get(table, f"SELECT {names} FROM {table}")
                with conn.cursor().copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                    for row in source.conn.execute(query):
                        copy.write_row(row)
                        count += 1
                rows[table] = count
        finally:
            source.conn.execute("COMMIT")
        for table, column in SEQUENCES:  # the next row made there gets a new number
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                f"(SELECT coalesce(max({column}), 0) + 1 FROM {table}), false)"
            )
    return rows


def _verify(
    source: SQLiteStore, target: PostgresStore, rows: dict[str, int], tally: recount.Tally
) -> dict[str, int]:
    """Each survey's n and tallies equal on both sides and to a recount of the copied reports."""
    with target._conn() as conn:
        for table, copied in rows.items():
            have = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            if have != copied:
                raise StoreError(f"verification failed: {table} has {have} rows, copied {copied}")
    surveys: dict[str, int] = {}
    for record in source.list_surveys():
        found = recount.verify(target, record.id, tally)
        if not found.consistent:
            raise StoreError(
                f"verification failed: {record.id}: "
                + "; ".join(recount.differences(found))
                + " (the source's own tallies may differ: run `verify` on it)"
            )
        if target.tallies(record.id) != source.tallies(record.id):
            raise StoreError(f"verification failed: {record.id}: tallies differ from the source")
        if target.pattern_counts(record.id) != source.pattern_counts(record.id):
            raise StoreError(
                f"verification failed: {record.id}: answer patterns differ from the source"
            )
        surveys[record.id] = found.stored_n
    return surveys
