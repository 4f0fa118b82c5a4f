"""Accounts and their tokens (docs/accounts.md), for admins: creating an account, making a
token (shown once) and revoking one."""

from __future__ import annotations

import re
from typing import Any

from flask import flash, redirect, render_template, request, url_for

from deniable.aggregator import access, accounts
from deniable.aggregator import surveys as actions
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.web.dashboard.base import EVERY_KIND, bp, principal, shown_on
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.statuses import refusal_status


def _accounts_page(
    *,
    error: str | None = None,
    status: int = 200,
    new_token: str | None = None,
    new_record: Any = None,
) -> Any:
    """The Accounts page: every account with its tokens, and the forms to create an account,
    create a token (shown once) and revoke a token. For admins."""
    who = principal()
    access.require_admin(who)
    store = get_store()
    tokens: dict[str, list[Any]] = {}
    for token in accounts.list_tokens(store, who):
        tokens.setdefault(token.account, []).append(token)
    return render_template(
        "accounts.html",
        accounts=accounts.list_accounts(store, who),
        tokens=tokens,
        error=error,
        new_token=new_token,
        new_record=new_record,
        now=actions.utc_now(),
    ), status


def _refused() -> Any:
    """Show a refused account or token action (a name taken, an unknown account or token) on
    the Accounts page, with the refusal's status."""

    def render(exc: ActionError) -> Any:
        return _accounts_page(error=str(exc), status=refusal_status(exc))

    return shown_on(render, EVERY_KIND)


@bp.route("/accounts")
def accounts_page() -> Any:
    """Accounts and their tokens (ids and labels, never a token), for admins."""
    return _accounts_page()


@bp.route("/accounts", methods=["POST"])
def create_account() -> Any:
    """Create an account (a researcher or a team), optionally an admin."""
    access.require_admin(principal())
    name = (request.form.get("name") or "").strip()
    with _refused():
        made = accounts.create_account(
            get_store(), principal(), name, admin=request.form.get("admin") == "1"
        )
    flash(f"Account {made.name!r} created.")
    return redirect(url_for("dashboard.accounts_page"))


def _survey_ids(text: str) -> list[str]:
    """The survey ids of the token form's field (separated by commas or spaces), bounded."""
    most = accounts.MAX_TOKEN_SURVEYS
    ids = [part for part in re.split(r"[\s,]+", text, maxsplit=most + 1) if part]
    if len(ids) > most:
        raise ActionError("bad-parameter", f"surveys: at most {most} ids; leave it empty for all")
    return list(dict.fromkeys(ids))


@bp.route("/accounts/tokens", methods=["POST"])
def create_token() -> Any:
    """Make a token for an account, shown once on the page (never in a cookie or a log)."""
    access.require_admin(principal())
    form = request.form
    with _refused():
        token, record = accounts.create_token(
            get_store(),
            principal(),
            (form.get("account") or "").strip(),
            expires=(form.get("expires") or "").strip() or None,
            read_only=form.get("read_only") == "1",
            surveys=_survey_ids(form.get("surveys") or ""),
            name=(form.get("label") or "").strip() or None,
        )
    return _accounts_page(new_token=token, new_record=record)


@bp.route("/accounts/tokens/revoke", methods=["POST"])
def revoke_token() -> Any:
    """Revoke a token by its id: it, and every session opened with it, is refused from the
    next request on."""
    access.require_admin(principal())
    token_id = (request.form.get("token_id") or "").strip()[:100]
    with _refused():
        record = accounts.revoke_token(get_store(), principal(), token_id)
    flash(f"Token {record.id} of {record.account!r} is revoked.")
    return redirect(url_for("dashboard.accounts_page"))
