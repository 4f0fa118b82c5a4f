"""The storage interface: the few operations the aggregator needs, whatever database is behind it.

SQLite (sqlite.py) and PostgreSQL (postgres.py) implement it, over the statements they share
in sql.py, so a third backend writes only its own SQL. Every method is one short transaction; the one that
writes reports takes the write lock up front and stores a batch, its tally increments and the
report counts together, so an accepted report is never lost or counted twice.

`Store` is the connection owner (migrate, ping, close) with every repository of
repositories.py on it, one per concern; the records it reads and writes are in records.py
(and named here too, as before).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from deniable.aggregator.store.records import (  # noqa: F401  (the records, named here too)
    ARM_PREFIX,
    FOLD_AT,
    PURGED_BODY,
    UNNAMED,
    Account,
    AuditEntry,
    BodyCounter,
    EnrollOutcome,
    Grant,
    LastOwnerError,
    NewReport,
    Recount,
    Role,
    StoredReport,
    StoreError,
    StoreOutcome,
    SurveyRecord,
    TokenRecord,
    resend_outcome,
)
from deniable.aggregator.store.repositories import (
    AccountRepository,
    AuditRepository,
    InvitationRepository,
    ReportRepository,
    RetentionRepository,
    RoleRepository,
    SessionRepository,
    SurveyRepository,
)


class Store(
    SurveyRepository,
    ReportRepository,
    RetentionRepository,
    AccountRepository,
    RoleRepository,
    AuditRepository,
    SessionRepository,
    InvitationRepository,
):
    """Narrow storage interface of the aggregator: every repository on one connection owner,
    which migrates, answers a ping and closes."""

    @abstractmethod
    def migrate(self) -> int:
        """Bring the schema to the current version; returns that version."""

    @abstractmethod
    def ping(self) -> None:
        """Raise StoreError unless the database answers."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""


def open_store(config: Mapping[str, Any], *, writer: bool = False) -> Store:
    """The store the configuration names (SQLite under DATA_DIR unless DATABASE_URL says else);
    a `writer` (a worker's group-commit store) gets SQLite's larger writer cache."""
    url = config.get("DATABASE_URL")
    if url:
        return _open_url(url, config)
    from deniable.aggregator.store.sqlite import SQLiteStore

    return SQLiteStore.in_data_dir(
        config["DATA_DIR"],
        busy_timeout=config.get("BUSY_TIMEOUT", 10_000),
        synchronous=config.get("SQLITE_SYNCHRONOUS", "FULL"),
        cache_mib=config.get("SQLITE_WRITER_CACHE_MIB") if writer else None,
    )


def _open_url(url: str, config: Mapping[str, Any]) -> Store:
    """The server database DENIABLE_DATABASE_URL names (PostgreSQL)."""
    if not url.startswith(("postgresql://", "postgres://")):
        raise StoreError(
            f"DENIABLE_DATABASE_URL={url.split('://')[0]}://...: only postgresql:// URLs are "
            "supported; unset it to use SQLite under DENIABLE_DATA_DIR"
        )
    try:
        from deniable.aggregator.store.postgres import PostgresStore
    except ImportError:
        raise StoreError(
            "DENIABLE_DATABASE_URL names PostgreSQL, but psycopg is not installed: "
            "pip install 'deniable[postgres]'"
        ) from None
    return PostgresStore(url, timeout=config.get("BUSY_TIMEOUT", 10_000) / 1000)
