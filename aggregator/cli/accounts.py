"""Accounts, tokens, roles and the audit log at the server's command line: `account`, `token`,
`grant`, `revoke` and `audit` (docs/accounts.md).

The operator runs them on the server as `access.OPERATOR` (an admin, "operator" in the audit
log); each calls a service function of aggregator/accounts.py, so the rules and the log are the
dashboard's and the API's. A token is printed only by `token create` and `create-token`, alone
on stdout, and never again: lists and the log name a token by its public id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import click
from flask.cli import AppGroup, with_appcontext

from deniable.aggregator import accounts, audit
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.errors import friendly
from deniable.aggregator.cli.terminal import shown
from deniable.aggregator.store import Account, AuditEntry, TokenRecord
from deniable.aggregator.web.db import existing_store, get_store

ROLE = click.Choice(accounts.ROLES)


def account_dict(account: Account) -> dict[str, Any]:
    """What `account list --json` shows of an account."""
    return {"name": account.name, "admin": account.admin, "created": account.created_at}


def token_dict(token: TokenRecord) -> dict[str, Any]:
    """What `token list --json` shows of a token: never the token or its hash."""
    return {
        "id": token.id,
        "account": token.account,
        "name": token.name,
        "created": token.created_at,
        "expires": token.expires_at,
        "read_only": token.read_only,
        "surveys": list(token.surveys) if token.surveys is not None else None,
        "revoked": token.revoked_at,
    }


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Columns padded to their widest cell (the last one left as it is)."""
    rows = [list(header), *([str(cell) for cell in row] for row in rows)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    )


def _state(token: TokenRecord, now: str) -> str:
    if token.revoked_at is not None:
        return f"revoked {token.revoked_at}"
    if not token.live(now):
        return f"expired {token.expires_at}"
    return f"until {token.expires_at}" if token.expires_at else "live"


account_group = AppGroup("account", help="Researcher accounts (an admin's business).")
token_group = AppGroup("token", help="Researcher tokens: make, list and revoke them.")


@account_group.command("create")
@click.argument("name")
@click.option("--admin", is_flag=True, help="An admin: every survey, account and token.")
@friendly
def account_create_command(name: str, admin: bool) -> None:
    """Create the account NAME (letters, digits and . _ @ -); it owns the surveys it creates."""
    made = accounts.create_account(get_store(), OPERATOR, name, admin=admin)
    click.echo(f"created account {made.name!r}" + (" (admin)" if made.admin else ""))


@account_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@friendly
def account_list_command(as_json: bool) -> None:
    """List the accounts, by name."""
    found = accounts.list_accounts(existing_store(), OPERATOR)
    if as_json:
        click.echo(json.dumps([account_dict(a) for a in found], indent=2))
        return
    rows = [(a.name, "admin" if a.admin else "-", a.created_at) for a in found]
    click.echo(table(("NAME", "ADMIN", "CREATED"), rows))


@token_group.command("create")
@click.argument("account")
@click.option(
    "--expires", default=None, metavar="30d|12h|90m|45s", help="Lifetime (default: until revoked)."
)
@click.option("--read-only", is_flag=True, help="Reads only: results, analyses, exports.")
@click.option(
    "--survey",
    "surveys",
    multiple=True,
    metavar="ID",
    help="Limit the token to this survey (repeat for more).",
)
@click.option("--name", default=None, metavar="LABEL", help="A label (default: the account).")
@friendly
def token_create_command(
    account: str, expires: str | None, read_only: bool, surveys: tuple[str, ...], name: str | None
) -> None:
    """Make a token of ACCOUNT and print it, alone; only its hash is stored."""
    token, _ = accounts.create_token(
        existing_store(),
        OPERATOR,
        account,
        expires=expires,
        read_only=read_only,
        surveys=surveys,
        name=name,
    )
    click.echo(token)


@token_group.command("list")
@click.option("--account", default=None, help="Only this account's tokens.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@friendly
def token_list_command(account: str | None, as_json: bool) -> None:
    """List the tokens by id, revoked and expired ones too (never a token itself)."""
    found = accounts.list_tokens(existing_store(), OPERATOR, account)
    if as_json:
        click.echo(json.dumps([token_dict(t) for t in found], indent=2))
        return
    now = accounts.now_text()
    rows = [
        (
            t.id,
            t.account,
            t.name,
            t.created_at,
            "read-only" if t.read_only else "-",
            ",".join(t.surveys) if t.surveys is not None else "all",
            _state(t, now),
        )
        for t in found
    ]
    header = ("ID", "ACCOUNT", "NAME", "CREATED", "ACCESS", "SURVEYS", "STATE")
    click.echo(table(header, rows))


@token_group.command("revoke")
@click.argument("id_or_token")
@friendly
def token_revoke_command(id_or_token: str) -> None:
    """Revoke a token by its id (`token list`) or the token itself; it is refused from its
    next request on, and its dashboard sessions end."""
    revoked = accounts.revoke_token(existing_store(), OPERATOR, id_or_token)
    click.echo(f"revoked token {revoked.id} of {revoked.account!r} ({revoked.revoked_at})")


@click.command("grant")
@click.argument("survey")
@click.argument("account")
@click.option("--role", type=ROLE, required=True, help="owner: everything; analyst: reads only.")
@with_appcontext
@friendly
def grant_command(survey: str, account: str, role: str) -> None:
    """Give ACCOUNT a role on SURVEY (replacing the one it had)."""
    given = accounts.grant(existing_store(survey), OPERATOR, survey, account, role)
    click.echo(f"{given.account!r} is {given.role} on survey {given.survey_id!r}")


@click.command("revoke")
@click.argument("survey")
@click.argument("account")
@with_appcontext
@friendly
def revoke_command(survey: str, account: str) -> None:
    """Take ACCOUNT's role on SURVEY away (a survey keeps at least one owner)."""
    accounts.revoke(existing_store(survey), OPERATOR, survey, account)
    click.echo(f"{account!r} has no role on survey {survey!r} any more")


#: Widths of the audit table's columns but the last (an account or survey may be wider).
AUDIT_COLUMNS = (("TIME", 20), ("ACCOUNT", 16), ("TOKEN", 12), ("SURVEY", 16), ("ACTION", 14))


def audit_row(cells: Sequence[str]) -> str:
    """One line of the readable audit log (streamed: the widths are fixed)."""
    padded = [cell.ljust(width) for cell, (_, width) in zip(cells, AUDIT_COLUMNS, strict=False)]
    return "  ".join([*padded, *cells[len(AUDIT_COLUMNS) :]])


def _audit_cells(entry: AuditEntry) -> tuple[str, ...]:
    """The readable row of one entry: every cell escaped as `shown` does, since accounts,
    surveys and parameters come from researchers and may hold terminal controls."""
    params = json.dumps(dict(entry.params), separators=(",", ":"), ensure_ascii=False)
    cells = (entry.time, entry.account, entry.token_id or "-", entry.survey or "-", entry.action)
    return tuple(shown(cell) for cell in (*cells, params))


@click.command("audit")
@click.option("--survey", default=None, metavar="ID", help="Only this survey's entries.")
@click.option(
    "--since", default=None, metavar="ISO", help="From this date or UTC time on (2025-01-31)."
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line (JSONL).")
@with_appcontext
@friendly
def audit_command(survey: str | None, since: str | None, as_json: bool) -> None:
    """Print the audit log, oldest first: who did what to which survey, with which parameters
    (never a token, never a report's content). Reading it is logged too."""
    entries = accounts.audit_entries(existing_store(survey), OPERATOR, survey=survey, since=since)
    if as_json:
        for line in audit.lines(entries):
            click.echo(line, nl=False)
        return
    click.echo(audit_row([*(name for name, _ in AUDIT_COLUMNS), "PARAMS"]))
    for entry in entries:
        click.echo(audit_row(_audit_cells(entry)))


COMMANDS = (account_group, token_group, grant_command, revoke_command, audit_command)
