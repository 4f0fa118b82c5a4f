"""Accounts, their tokens and their roles on surveys: the service functions the CLI, the
dashboard and the API call alike (docs/accounts.md).

Each function asks aggregator/access.py whether `who` may act, and appends what it did to the
audit log (aggregator/audit.py): never a token, only its public id. No Flask here: refusals
are ActionErrors (aggregator/refusals.py) that each edge shows its own way.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

from deniable.aggregator import access, audit, credentials
from deniable.aggregator.access import Principal
from deniable.aggregator.refusals import ActionError, survey_or_404
from deniable.aggregator.store import (
    Account,
    AuditEntry,
    Grant,
    LastOwnerError,
    Role,
    Store,
    TokenRecord,
)

#: An account's name: 1 to 64 letters, digits and . _ @ -, starting with a letter or digit.
ACCOUNT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
#: The name the audit log gives the operator at the server's command line (access.OPERATOR).
RESERVED_NAMES = frozenset({access.OPERATOR.account})
#: A token's expiry: a whole number of days, hours, minutes or seconds from now.
EXPIRY = re.compile(r"([0-9]{1,9})([dhms])")
EXPIRY_UNITS = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
#: The longest a token may live (ten years): a larger number is a typo, and bounds the date.
MAX_EXPIRY = timedelta(days=3650)
#: The most surveys one token may be limited to, and the longest label it may carry.
MAX_TOKEN_SURVEYS = 1000
MAX_LABEL = 64
#: The public id of a token: the first 12 hex digits of its sha256 (store.TokenRecord.id).
TOKEN_ID = re.compile(r"[0-9a-f]{12}")
ROLES: tuple[Role, ...] = ("owner", "analyst")
#: `since` of the audit log: a date, or a UTC time to the second (Z optional).
SINCE_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
SINCE_TIME = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z?")


def _now() -> datetime:
    return datetime.now(UTC)


def _text(moment: datetime) -> str:
    """A time as the store keeps times (text that compares in time order)."""
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}Z"
    )


def now_text() -> str:
    """The current UTC time as the store keeps times."""
    return _text(_now())


def parse_expiry(text: str, now: datetime) -> str:
    """The expiry time `text` ("30d", "12h", "90m", "45s") after `now`, as stored; ActionError
    bad-parameter for anything else, for zero, or beyond ten years."""
    match = EXPIRY.fullmatch(text.strip().lower()) if len(text) <= 20 else None
    if match is None:
        raise ActionError(
            "bad-parameter",
            f"expires: expected a duration like 30d, 12h, 90m or 45s, got {text[:40]!r}",
        )
    amount, unit = int(match.group(1)), match.group(2)
    span = timedelta(**{EXPIRY_UNITS[unit]: amount})  # at most 999999999 days: no overflow
    if amount == 0 or span > MAX_EXPIRY:
        raise ActionError(
            "bad-parameter",
            f"expires: expected a duration from 1s to {MAX_EXPIRY.days}d, got {text.strip()!r}",
        )
    return _text(now + span)


def _account(store: Store, name: str) -> Account:
    """The account of this name, or ActionError not-found."""
    # Printable text only: a NUL or a control character names no account (and PostgreSQL's
    # text cannot hold a NUL). Upgraded accounts keep their old token names, spaces included.
    found = store.get_account(name) if 0 < len(name) <= 256 and name.isprintable() else None
    if found is None:
        raise ActionError(
            "not-found",
            f"no account {name[:64]!r}; `deniable-aggregator account list` shows them",
        )
    return found


def create_account(store: Store, who: Principal, name: str, *, admin: bool = False) -> Account:
    """A new account (an admin of everything with `admin`); admins only. ActionError invalid
    for a name that is not ACCOUNT_NAME, conflict when it is taken."""
    access.require_admin(who)
    if not ACCOUNT_NAME.fullmatch(name):
        raise ActionError(
            "invalid",
            f"account name: expected 1 to 64 letters, digits, '.', '_', '@' or '-', starting "
            f"with a letter or digit, got {name[:70]!r}",
        )
    if name.lower() in RESERVED_NAMES:
        raise ActionError(
            "invalid",
            f"account name: {name!r} names the server's command line in the audit log; "
            "choose another",
        )
    created = store.create_account(name, admin, _text(_now()))
    if created is None:
        raise ActionError("conflict", f"an account named {name!r} exists; choose another name")
    audit.record(store, who, None, "account.create", {"account": name, "admin": admin})
    return created


def list_accounts(store: Store, who: Principal) -> list[Account]:
    """Every account, by name; admins only."""
    access.require_admin(who)
    found = store.list_accounts()
    audit.record(store, who, None, "account.list")
    return found


def create_token(
    store: Store,
    who: Principal,
    account: str,
    *,
    expires: str | None = None,
    read_only: bool = False,
    surveys: Sequence[str] = (),
    name: str | None = None,
) -> tuple[str, TokenRecord]:
    """A new token of the account and its record (only its hash is stored); admins only.

    `expires` is a duration (parse_expiry), `read_only` drops every change, `surveys` limits
    the token to those surveys (each must exist), `name` labels it (default: the account's
    name). ActionError not-found for an unknown account or survey."""
    access.require_admin(who)
    owner = _account(store, account)
    label = (name if name is not None else owner.name).strip()
    if not label or len(label) > MAX_LABEL or not label.isprintable():
        raise ActionError("invalid", f"token name: expected 1 to {MAX_LABEL} printable characters")
    scope = list(dict.fromkeys(surveys))
    if len(scope) > MAX_TOKEN_SURVEYS:
        raise ActionError(
            "bad-parameter",
            f"surveys: at most {MAX_TOKEN_SURVEYS} per token; give the account a role instead",
        )
    for survey_id in scope:
        survey_or_404(store, survey_id)
    now = _now()
    expires_at = parse_expiry(expires, now) if expires is not None else None
    token = credentials.new_token()
    record = store.add_token(
        credentials.digest(token),
        owner.id,
        label,
        _text(now),
        expires_at=expires_at,
        read_only=read_only,
        surveys=scope or None,
    )
    params = {
        "account": owner.name,
        "token_id": record.id,
        "name": label,
        "expires": expires_at,
        "read_only": read_only,
        "surveys": scope or None,
    }
    audit.record(store, who, None, "token.create", params)
    return token, record


def admin_token(store: Store, who: Principal, name: str) -> tuple[str, TokenRecord]:
    """A new admin token labelled `name`, of the admin account of that name (made if absent):
    what `deniable-aggregator create-token --name NAME` prints. Admins only; ActionError
    conflict when an account of that name exists and is not an admin."""
    access.require_admin(who)
    label = name.strip()
    if not label or len(label) > MAX_LABEL or not label.isprintable():
        raise ActionError("invalid", f"token name: expected 1 to {MAX_LABEL} printable characters")
    token = credentials.new_token()
    try:
        record = store.add_admin_token(credentials.digest(token), label, _text(_now()))
    except ValueError:
        raise ActionError(
            "conflict",
            f"the account {label!r} is not an admin; give its tokens with "
            f"`deniable-aggregator token create {label}`, or choose another --name",
        ) from None
    params = {"account": record.account, "token_id": record.id, "name": label, "admin": True}
    audit.record(store, who, None, "token.create", params)
    return token, record


def list_tokens(store: Store, who: Principal, account: str | None = None) -> list[TokenRecord]:
    """Every token (of one account), revoked and expired ones too, oldest first; admins only."""
    access.require_admin(who)
    account_id = _account(store, account).id if account is not None else None
    found = store.list_tokens(account_id)
    audit.record(store, who, None, "token.list", {"account": account})
    return found


def _token_id(store: Store, id_or_token: str) -> str | None:
    """The public id named by a token id or by the token itself (None: no such token)."""
    text = id_or_token.strip()
    if TOKEN_ID.fullmatch(text):
        return text
    if not text or len(text) > 512:
        return None
    found = store.token_by_hash(credentials.digest(text))
    return found.id if found is not None else None


def revoke_token(store: Store, who: Principal, id_or_token: str) -> TokenRecord:
    """Revoke a token, named by its 12-hex id or by the token itself; its dashboard sessions
    end and it is refused from its next request. Admins only; ActionError not-found when no
    token is so named. Revoking twice keeps the first time."""
    access.require_admin(who)
    token_id = _token_id(store, id_or_token)
    revoked = store.revoke_token(token_id, _text(_now())) if token_id is not None else None
    if revoked is None:
        raise ActionError(
            "not-found",
            "no such token; give its id (`deniable-aggregator token list`) or the token itself",
        )
    params = {"account": revoked.account, "token_id": revoked.id}
    audit.record(store, who, None, "token.revoke", params)
    return revoked


def revoke_named(store: Store, who: Principal, name: str) -> int:
    """Revoke every live token labelled `name` (`revoke-token NAME`), ending their dashboard
    sessions; how many. Admins only; ActionError not-found when there is none."""
    access.require_admin(who)
    revoked = store.remove_tokens(name)
    if not revoked:
        raise ActionError(
            "not-found",
            f"no token named {name[:64]!r} left to revoke; `deniable-aggregator token list` "
            "shows them",
        )
    audit.record(store, who, None, "token.revoke", {"name": name, "count": revoked})
    return revoked


def people(store: Store, who: Principal, survey_id: str) -> list[Grant]:
    """Who has which role on the survey; for those who may grant on it (owners, admins)."""
    access.authorize(store, who, survey_id, "grant")
    found = store.grants(survey_id)
    audit.record(store, who, survey_id, "people")
    return found


def _last_owner(survey_id: str, account: str) -> ActionError:
    return ActionError(
        "conflict",
        f"{account!r} is the last owner of survey {survey_id!r}; make another account owner first",
    )


def grant(store: Store, who: Principal, survey_id: str, account: str, role: str) -> Grant:
    """Give the account this role (owner or analyst) on the survey, replacing the role it had;
    for those who may grant on it. ActionError invalid for another role, not-found for an
    unknown account, conflict when it would leave the survey without an owner."""
    access.authorize(store, who, survey_id, "grant")
    if role not in ROLES:
        raise ActionError("invalid", f"role: expected owner or analyst, got {role[:40]!r}")
    target = _account(store, account)
    try:  # the last-owner check runs in the store's transaction, so no race passes it
        store.grant(survey_id, target.id, role, _text(_now()))  # type: ignore[arg-type]
    except LastOwnerError:
        raise _last_owner(survey_id, target.name) from None
    audit.record(store, who, survey_id, "grant", {"account": target.name, "role": role})
    for given in store.grants(survey_id):
        if given.account_id == target.id:
            return given
    raise ActionError("conflict", f"the role of {target.name!r} changed meanwhile; try again")


def revoke(store: Store, who: Principal, survey_id: str, account: str) -> None:
    """Take the account's role on the survey away; for those who may grant on it. ActionError
    not-found when it has none, conflict when it is the survey's last owner."""
    access.authorize(store, who, survey_id, "grant")
    target = _account(store, account)
    before = store.grants(survey_id)
    role = next((g.role for g in before if g.account_id == target.id), None)
    if role is None:
        raise ActionError(
            "not-found", f"{target.name!r} has no role on survey {survey_id!r}; nothing to revoke"
        )
    try:  # checked again in the store's transaction: two owners cannot remove each other
        store.revoke_grant(survey_id, target.id)
    except LastOwnerError:
        raise _last_owner(survey_id, target.name) from None
    audit.record(store, who, survey_id, "revoke", {"account": target.name, "role": role})


def parse_since(text: str) -> str:
    """`since` as stored times read ("2025-01-31" is its midnight, UTC); ActionError
    bad-parameter for anything but a real date or UTC time to the second."""
    value = text.strip()
    date = SINCE_DATE.fullmatch(value) if len(value) <= 25 else None
    time = SINCE_TIME.fullmatch(value) if len(value) <= 25 else None
    parts = (date or time).groups() if (date or time) else None
    try:
        if parts is None:
            raise ValueError
        moment = datetime(*(int(p) for p in parts))  # type: ignore[misc]
    except ValueError:
        raise ActionError(
            "bad-parameter",
            "since: expected a date (2025-01-31) or a UTC time (2025-01-31T09:30:00Z), "
            f"got {text[:40]!r}",
        ) from None
    return _text(moment)


def audit_entries(
    store: Store, who: Principal, *, survey: str | None = None, since: str | None = None
) -> Iterator[AuditEntry]:
    """The audit log (of one survey; from `since` on), oldest first, streamed. A survey's log
    is for those who may read it (owners, admins), the whole log for admins. The reading is
    itself logged, before the entries are read."""
    if survey is not None:
        access.authorize(store, who, survey, "audit")
    else:
        access.require_admin(who)
    start = parse_since(since) if since is not None else None
    audit.record(store, who, survey, "audit", {"since": start})
    return store.iter_audit(survey=survey, since=start)


def purge_audit(store: Store, days: int, *, now: datetime | None = None) -> int:
    """Delete the audit entries older than `days` days (DENIABLE_AUDIT_RETENTION_DAYS); how
    many. The operator's maintenance, as the purge of old reports is."""
    return store.purge_audit(_text((now or _now()) - timedelta(days=days)))
