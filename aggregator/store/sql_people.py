"""The researcher side of the store, the same SQL on every backend: accounts and their tokens,
roles on surveys (the last-owner check in the transaction that changes one), the audit log and
dashboard sessions. Mixed into SQLStore (sql.py), whose connections it uses (`_run`, `_one`,
`_query`, `_read`, `_write`), as gateway.py's records are.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from deniable.aggregator.credentials import token_id as id_of_hash
from deniable.aggregator.store.base import (
    Account,
    AuditEntry,
    Grant,
    LastOwnerError,
    Role,
    TokenRecord,
)

#: A DB-API connection as both drivers offer it: `execute` returns a cursor.
Connection = Any

#: A token row in TokenRecord's order (tokens t joined to their accounts a).
TOKEN_COLUMNS = (
    "t.id, a.name, t.account_id, a.admin, coalesce(t.name, ''), coalesce(t.created_at, ''), "
    "t.expires_at, t.read_only, t.surveys, t.revoked_at"
)
TOKENS = f"SELECT {TOKEN_COLUMNS} FROM tokens t JOIN accounts a ON a.id = t.account_id"
#: A token live at the time bound to the `?` (not revoked, not expired), for table alias t.
LIVE = "t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > ?)"
#: Audit entries read per query while the log streams.
AUDIT_ROWS_AT_ONCE = 1000


def _token(row: Sequence[Any]) -> TokenRecord:
    """A token row (TOKEN_COLUMNS) as a TokenRecord; the scope is stored as a JSON list."""
    tid, account, account_id, admin, name, created, expires, read_only, scope, revoked = row
    surveys = tuple(json.loads(scope)) if scope is not None else None
    admin, read_only = bool(admin), bool(read_only)  # SQLite's are 0/1
    return TokenRecord(
        tid, account, account_id, admin, name, created, expires, read_only, surveys, revoked
    )


def _utc_now() -> str:
    """Now as format_timestamp writes it (for the calls that take no time)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SQLPeople:
    """Accounts, tokens, roles, the audit log and sessions, over the host store's connections."""

    # researchers: accounts and their tokens
    def create_account(self, name: str, admin: bool, now: str) -> Account | None:
        with self._write() as conn:
            row = self._run(
                conn,
                "INSERT INTO accounts (name, admin, created_at) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING RETURNING id",
                (name, bool(admin), now),
            ).fetchall()
        return Account(row[0][0], name, bool(admin), now) if row else None

    def get_account(self, name: str) -> Account | None:
        row = self._one("SELECT id, name, admin, created_at FROM accounts WHERE name = ?", (name,))
        return Account(row[0], row[1], bool(row[2]), row[3]) if row else None

    def list_accounts(self) -> list[Account]:
        with self._query() as conn:
            rows = self._run(
                conn, "SELECT id, name, admin, created_at FROM accounts ORDER BY name"
            ).fetchall()
        return [Account(r[0], r[1], bool(r[2]), r[3]) for r in rows]

    def add_token(
        self,
        token_hash: str,
        account_id: int,
        name: str,
        now: str,
        *,
        expires_at: str | None = None,
        read_only: bool = False,
        surveys: Sequence[str] | None = None,
    ) -> TokenRecord:
        scope = json.dumps(list(surveys)) if surveys is not None else None
        with self._write() as conn:
            if not self._exists(conn, "accounts", account_id):
                raise ValueError(f"no account has the id {account_id}")
            added = self._run(
                conn,
                "INSERT INTO tokens (id, hash, account_id, name, created_at, expires_at, "
                "read_only, surveys) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING RETURNING id",
                (
                    id_of_hash(token_hash),
                    token_hash,
                    account_id,
                    name,
                    now,
                    expires_at,
                    bool(read_only),
                    scope,
                ),
            ).fetchall()
            if not added:
                raise ValueError("a token with this hash (or id) is already stored; make another")
            return _token(self._run(conn, f"{TOKENS} WHERE t.hash = ?", (token_hash,)).fetchone())

    def token_by_hash(self, token_hash: str) -> TokenRecord | None:
        row = self._one(f"{TOKENS} WHERE t.hash = ?", (token_hash,))
        return _token(row) if row else None

    def list_tokens(self, account_id: int | None = None) -> list[TokenRecord]:
        where, args = (
            ("WHERE t.account_id = ? ", (account_id,)) if account_id is not None else ("", ())
        )
        with self._query() as conn:
            rows = self._run(conn, f"{TOKENS} {where}ORDER BY t.created_at, t.id", args).fetchall()
        return [_token(row) for row in rows]

    def revoke_token(self, token_id: str, now: str) -> TokenRecord | None:
        with self._write() as conn:
            self._run(
                conn,
                "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (now, token_id),
            )
            self._run(
                conn,
                "DELETE FROM sessions WHERE token_hash IN (SELECT hash FROM tokens WHERE id = ?)",
                (token_id,),
            )
            row = self._run(conn, f"{TOKENS} WHERE t.id = ?", (token_id,)).fetchone()
        return _token(row) if row else None

    def remove_tokens(self, name: str, now: str | None = None) -> int:
        now = now or _utc_now()
        with self._write() as conn:
            revoked = self._run(
                conn,
                f"UPDATE tokens AS t SET revoked_at = ? WHERE t.name = ? AND {LIVE} RETURNING 1",
                (now, name, now),
            ).fetchall()
            self._run(
                conn,
                "DELETE FROM sessions WHERE token_hash IN (SELECT hash FROM tokens WHERE name = ?)",
                (name,),
            )
        return len(revoked)

    def token_hashes(self, now: str | None = None) -> list[str]:
        """The hashes of the tokens live at `now` (default: the present), oldest first; for
        callers that have not moved to token_by_hash."""
        with self._query() as conn:
            rows = self._run(
                conn,
                f"SELECT t.hash FROM tokens t WHERE {LIVE} ORDER BY t.created_at, t.id",
                (now or _utc_now(),),
            ).fetchall()
        return [row[0] for row in rows]

    # roles on surveys
    def _grant(
        self, conn: Connection, survey_id: str, account_id: int, role: Role, now: str
    ) -> None:
        self._run(
            conn,
            "INSERT INTO grants (survey_id, account_id, role, granted_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (survey_id, account_id) "
            "DO UPDATE SET role = excluded.role, granted_at = excluded.granted_at",
            (survey_id, account_id, role, now),
        )

    def _lock_grants(self, conn: Connection, survey_id: str) -> None:
        """Serialize the role changes of one survey until the transaction ends (a backend whose
        write transactions already run one at a time needs nothing)."""

    def _owners(self, conn: Connection, survey_id: str) -> set[int]:
        """The survey's owners, its role changes locked first (see LastOwnerError)."""
        self._lock_grants(conn, survey_id)
        rows = self._run(
            conn,
            "SELECT account_id FROM grants WHERE survey_id = ? AND role = 'owner'",
            (survey_id,),
        )
        return {row[0] for row in rows}

    def grant(self, survey_id: str, account_id: int, role: Role, now: str) -> None:
        if role not in ("owner", "analyst"):
            raise ValueError(f"the role {role!r} is not one of owner, analyst")
        with self._write() as conn:
            if not self._exists(conn, "surveys", survey_id):
                raise ValueError(f"no survey {survey_id!r}")
            if not self._exists(conn, "accounts", account_id):
                raise ValueError(f"no account has the id {account_id}")
            if role != "owner" and self._owners(conn, survey_id) == {account_id}:
                raise LastOwnerError(f"account {account_id} is the last owner of {survey_id!r}")
            self._grant(conn, survey_id, account_id, role, now)

    def revoke_grant(self, survey_id: str, account_id: int) -> bool:
        with self._write() as conn:
            if self._owners(conn, survey_id) == {account_id}:
                raise LastOwnerError(f"account {account_id} is the last owner of {survey_id!r}")
            return bool(
                self._run(
                    conn,
                    "DELETE FROM grants WHERE survey_id = ? AND account_id = ? RETURNING 1",
                    (survey_id, account_id),
                ).fetchall()
            )

    def grants(self, survey_id: str) -> list[Grant]:
        with self._query() as conn:
            rows = self._run(
                conn,
                "SELECT g.survey_id, a.name, g.account_id, g.role, g.granted_at FROM grants g "
                "JOIN accounts a ON a.id = g.account_id WHERE g.survey_id = ? ORDER BY a.name",
                (survey_id,),
            ).fetchall()
        return [Grant(*row) for row in rows]

    def roles_of(self, account_id: int) -> dict[str, Role]:
        with self._query() as conn:
            rows = self._run(
                conn, "SELECT survey_id, role FROM grants WHERE account_id = ?", (account_id,)
            ).fetchall()
        return {survey_id: role for survey_id, role in rows}

    # the audit log
    def append_audit(self, entry: AuditEntry) -> None:
        with self._write() as conn:
            self._run(
                conn,
                "INSERT INTO audit (time, account, token_id, survey, action, params) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    entry.time,
                    entry.account,
                    entry.token_id,
                    entry.survey,
                    entry.action,
                    json.dumps(dict(entry.params), separators=(",", ":")),
                ),
            )

    def iter_audit(
        self, *, survey: str | None = None, since: str | None = None
    ) -> Iterator[AuditEntry]:
        # Keyset pages in seq order: a page at a time in memory however long the log is.
        where = "seq > ?"
        args: list[object] = []
        if survey is not None:
            where += " AND survey = ?"
            args.append(survey)
        if since is not None:
            where += " AND time >= ?"
            args.append(since)
        query = (
            "SELECT seq, time, account, token_id, survey, action, params FROM audit "
            f"WHERE {where} ORDER BY seq LIMIT {AUDIT_ROWS_AT_ONCE}"
        )
        last = 0
        while True:
            with self._query() as conn:
                rows = self._run(conn, query, (last, *args)).fetchall()
            for _, time, account, tid, sid, action, params in rows:
                yield AuditEntry(time, account, tid, sid, action, json.loads(params))
            if len(rows) < AUDIT_ROWS_AT_ONCE:
                return
            last = rows[-1][0]

    def purge_audit(self, before: str) -> int:
        with self._write() as conn:
            return len(
                self._run(
                    conn, "DELETE FROM audit WHERE time < ? RETURNING 1", (before,)
                ).fetchall()
            )

    # dashboard sessions
    def open_session(
        self, session_hash: str, token_hash: str, created_at: str, expires_at: str
    ) -> bool:
        with self._write() as conn:
            self._run(conn, "DELETE FROM sessions WHERE expires_at <= ?", (created_at,))
            # Only while the token is live: a revocation racing the login wins.
            return bool(
                self._run(
                    conn,
                    "INSERT INTO sessions (hash, token_hash, created_at, expires_at) "
                    f"SELECT ?, t.hash, ?, ? FROM tokens t WHERE t.hash = ? AND {LIVE} RETURNING 1",
                    (session_hash, created_at, expires_at, token_hash, created_at),
                ).fetchall()
            )

    def session_token(self, session_hash: str, now: str, *, opened_after: str) -> str | None:
        row = self._one(
            "SELECT s.token_hash, s.expires_at > ? AND s.created_at > ?, "
            f"t.hash IS NOT NULL AND {LIVE} "
            "FROM sessions s LEFT JOIN tokens t ON t.hash = s.token_hash WHERE s.hash = ?",
            (now, opened_after, now, session_hash),
        )
        if row is None:
            return None
        token_hash, live, token_live = row
        if live and token_live:
            return token_hash
        self.end_session(session_hash, now)
        return None

    def end_session(self, session_hash: str, now: str) -> None:
        with self._write() as conn:
            self._run(
                conn, "DELETE FROM sessions WHERE hash = ? OR expires_at <= ?", (session_hash, now)
            )
