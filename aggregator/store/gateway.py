"""What the OHTTP gateway keeps in the database (docs/anonymity.md): its keys, and how many
reports each relay batch carried per survey. The same SQL on SQLite and PostgreSQL, so that
every aggregator process sharing a database holds the same keys and counts the same batches.

- `ohttp_keys`: one X25519 key per row, by its OHTTP key id (0-255). The current key has no
  `retires_at`; a rotated one is accepted until its `retires_at`, then deleted at the next
  rotation (and never used after that time).
- `shuffle_batches`: per survey, per relay batch, per pattern of plain answers (a report's plain
  answers single it out of its batch, so it hides only among those that share them), the
  reports the gateway accepted. A survey's shuffle n is the smallest count.
"""

from __future__ import annotations

from dataclasses import dataclass

from deniable.aggregator.store.base import StoreError

#: The tables, the same statements on both backends (a migration of each runs them).
SCHEMA = (
    """CREATE TABLE ohttp_keys (
        key_id INTEGER PRIMARY KEY,
        private_key TEXT NOT NULL,
        created_at TEXT NOT NULL,
        retires_at TEXT)""",
    """CREATE TABLE shuffle_batches (
        survey_id TEXT NOT NULL REFERENCES surveys (id),
        batch TEXT NOT NULL,
        plain TEXT NOT NULL,
        reports INTEGER NOT NULL,
        PRIMARY KEY (survey_id, batch, plain))""",
)


@dataclass(frozen=True)
class StoredKey:
    """A gateway key as stored: id, X25519 private key (hex), when made, when it retires
    (None: the current key)."""

    key_id: int
    private_key: str
    created_at: str
    retires_at: str | None


class GatewayRecords:
    """The gateway's store operations, mixed into SQLStore (its `_run`, `_write`, `_query`)."""

    def ohttp_keys(self, now: str) -> list[StoredKey]:
        """The keys still accepted at `now`, the current one first, then newest first."""
        with self._query() as conn:
            rows = self._run(
                conn,
                "SELECT key_id, private_key, created_at, retires_at FROM ohttp_keys "
                "WHERE retires_at IS NULL OR retires_at > ? "
                "ORDER BY retires_at IS NOT NULL, created_at DESC, key_id DESC",
                (now,),
            ).fetchall()
        return [StoredKey(int(k), p, c, r) for k, p, c, r in rows]

    def add_first_ohttp_key(self, private_key: str, now: str) -> bool:
        """Store the gateway's first key (id 0), unless it has one already (then False)."""
        with self._write() as conn:
            if self._run(conn, "SELECT 1 FROM ohttp_keys").fetchone() is not None:
                return False
            self._run(
                conn,
                "INSERT INTO ohttp_keys (key_id, private_key, created_at) VALUES (0, ?, ?) "
                "ON CONFLICT (key_id) DO NOTHING",
                (private_key, now),
            )
        return True

    def rotate_ohttp_key(self, private_key: str, now: str, retires_at: str) -> list[StoredKey]:
        """Make `private_key` the current key, under the next free key id: the current one is
        accepted until `retires_at`, keys retired by `now` are deleted. Every key after the
        rotation, the new one first (StoreError when all 256 ids are taken)."""
        with self._write() as conn:
            self._run(conn, "DELETE FROM ohttp_keys WHERE retires_at <= ?", (now,))
            rows = self._run(
                conn, "SELECT key_id FROM ohttp_keys ORDER BY created_at DESC, key_id DESC"
            ).fetchall()
            used = [int(row[0]) for row in rows]
            start = used[0] + 1 if used else 0
            free = [(start + i) % 256 for i in range(256) if (start + i) % 256 not in used]
            if not free:
                raise StoreError(
                    "all 256 OHTTP key ids are in use by keys not yet retired; wait until one "
                    "retires, or rotate with a shorter --overlap"
                )
            self._run(
                conn,
                "UPDATE ohttp_keys SET retires_at = ? WHERE retires_at IS NULL",
                (retires_at,),
            )
            self._run(
                conn,
                "INSERT INTO ohttp_keys (key_id, private_key, created_at) VALUES (?, ?, ?)",
                (free[0], private_key, now),
            )
        return self.ohttp_keys(now)

    def count_in_batch(self, survey_id: str, batch: str, plain: str) -> None:
        """One more report of a survey accepted from a relay batch (with these plain answers)."""
        with self._write() as conn:
            self._run(
                conn,
                "INSERT INTO shuffle_batches (survey_id, batch, plain, reports) "
                "VALUES (?, ?, ?, 1) ON CONFLICT (survey_id, batch, plain) "
                "DO UPDATE SET reports = shuffle_batches.reports + 1",
                (survey_id, batch, plain),
            )

    def smallest_batch(self, survey_id: str) -> int:
        """The fewest reports of the survey that shared a relay batch and their plain answers
        (0 when none came through a relay)."""
        with self._query() as conn:
            row = self._run(
                conn, "SELECT min(reports) FROM shuffle_batches WHERE survey_id = ?", (survey_id,)
            ).fetchone()
        return int(row[0]) if row and row[0] is not None else 0
