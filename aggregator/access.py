"""Who may do what: the one rule every researcher action passes, for the API, the dashboard
and the CLI alike (docs/accounts.md).

A `Principal` is who is asking: an account, through one of its tokens (or the operator at the
server's command line, who is an admin). Roles are per survey: an `owner` may do everything on
that survey, an `analyst` may read (results, analyses, exports) and change nothing; an admin
account may do everything everywhere. A token may narrow its account's reach: read-only (no
action that changes something) or limited to some surveys. A survey the principal may not see
is refused as not found, exactly as a survey that does not exist, so ids cannot be probed; a
survey it sees and an action it may not take is forbidden. No Flask here: refusals are
ActionErrors that each edge shows its own way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from deniable.aggregator.credentials import digest
from deniable.aggregator.refusals import ActionError, not_found, survey_or_404
from deniable.aggregator.store import Role, Store, SurveyRecord, TokenRecord

#: What a researcher does to a survey. Reading: the survey's page and document ("view"),
#: results, analyses (breakdown, crosstab, regression) and exports (CSV, reports.jsonl).
#: Changing: invitations, closing, granting and revoking roles; reading the survey's audit log
#: is an owner's too.
Action = Literal["view", "results", "analyze", "export", "invite", "close", "grant", "audit"]
READS: frozenset[Action] = frozenset({"view", "results", "analyze", "export"})
CHANGES: frozenset[Action] = frozenset({"invite", "close", "grant"})
#: What each role may do on its survey.
ALLOWED: dict[Role, frozenset[Action]] = {
    "owner": READS | CHANGES | {"audit"},
    "analyst": READS,
}


@dataclass(frozen=True)
class Principal:
    """Who asks: the account (by id and name), the token used (its public id) and what that
    token narrows the account's reach to."""

    account: str
    account_id: int | None
    token_id: str | None
    admin: bool
    read_only: bool = False
    surveys: frozenset[str] | None = None

    @classmethod
    def of_token(cls, token: TokenRecord) -> Principal:
        """The principal a (live) stored token speaks for."""
        scope = frozenset(token.surveys) if token.surveys is not None else None
        return cls(token.account, token.account_id, token.id, token.admin, token.read_only, scope)


#: The operator at the server's command line: the machine's own user, an admin of everything.
OPERATOR = Principal(account="operator", account_id=None, token_id=None, admin=True)


def authenticate(store: Store, token: str, now: str) -> Principal:
    """The principal a bearer token speaks for; ActionError unauthenticated for a token that is
    unknown, revoked or expired at `now` (the message says which, and what to do)."""
    found = store.token_by_hash(digest(token))
    if found is None:
        raise ActionError(
            "unauthenticated",
            "the bearer token is not valid here; ask an admin for one "
            "(`deniable-aggregator token create ACCOUNT`)",
        )
    if not found.live(now):
        state = "revoked" if found.revoked_at is not None else "expired"
        raise ActionError(
            "unauthenticated", f"the bearer token {found.id} is {state}; ask an admin for a new one"
        )
    return Principal.of_token(found)


def _in_scope(who: Principal, survey_id: str) -> bool:
    return who.surveys is None or survey_id in who.surveys


def role_on(store: Store, who: Principal, survey_id: str) -> Role | Literal["admin"] | None:
    """The principal's standing on a survey: admin, its role, or None (it may not see it)."""
    if not _in_scope(who, survey_id):
        return None
    if who.admin:
        return "admin"
    if who.account_id is None:
        return None
    return store.roles_of(who.account_id).get(survey_id)


def may(who: Principal, standing: Role | Literal["admin"] | None, action: Action) -> bool:
    """Whether someone of this standing on a survey, through this token, may take the action."""
    if standing is None or (who.read_only and action not in READS):
        return False
    return standing == "admin" or action in ALLOWED[standing]


def authorize(store: Store, who: Principal, survey_id: str, action: Action) -> SurveyRecord:
    """The survey, if the principal may take the action on it: ActionError not-found when it
    may not see the survey (the same refusal as for a survey that does not exist), forbidden
    when it sees the survey but may not take this action."""
    record = survey_or_404(store, survey_id)
    standing = role_on(store, who, survey_id)
    if standing is None:
        raise not_found(survey_id)  # the very refusal of an unknown id, word for word
    if not may(who, standing, action):
        if who.read_only and action not in READS:
            why = "this token is read-only"
        else:
            why = f"{who.account!r} is {standing} on survey {survey_id!r}; {action} needs owner"
        raise ActionError("forbidden", f"{why}; ask an owner of the survey or an admin")
    return record


def visible_surveys(store: Store, who: Principal) -> list[SurveyRecord]:
    """Every survey the principal may see, as the store lists them."""
    if who.admin:
        return [r for r in store.list_surveys() if _in_scope(who, r.id)]
    roles = store.roles_of(who.account_id) if who.account_id is not None else {}
    return [r for r in store.list_surveys() if r.id in roles and _in_scope(who, r.id)]


def may_create(who: Principal) -> bool:
    """Whether the principal may create surveys (what require_creator refuses otherwise)."""
    return not who.read_only and who.surveys is None


def is_admin(who: Principal) -> bool:
    """Whether the principal may manage accounts and tokens and read the whole audit log (what
    require_admin refuses otherwise): an admin account's full token."""
    return who.admin and not who.read_only and who.surveys is None


def require_creator(who: Principal) -> None:
    """Refuse (forbidden) a principal that may not create surveys: a read-only token, or one
    limited to some surveys (it could not see what it created)."""
    if who.read_only:
        raise ActionError("forbidden", "this token is read-only; creating a survey needs another")
    if who.surveys is not None:
        raise ActionError(
            "forbidden",
            "this token is limited to some surveys; create surveys with a token of the "
            "account that is not",
        )


def require_admin(who: Principal) -> None:
    """Refuse (forbidden) anyone but an admin, with a full-reach token, for accounts and tokens."""
    if not is_admin(who):
        raise ActionError(
            "forbidden", "managing accounts and tokens needs an admin account's full token"
        )
