"""A survey's People tab (docs/accounts.md): who has which role on it, granting and revoking."""

from __future__ import annotations

from typing import Any

from flask import flash, redirect, render_template, request, url_for

from deniable.aggregator import access, accounts
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.web.dashboard.base import (
    EVERY_KIND,
    bp,
    principal,
    shown_on,
    survey_nav,
    survey_or_404,
)
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.statuses import refusal_status


def _people_page(survey_id: str, *, error: str | None = None, status: int = 200) -> Any:
    """The People tab: who has which role on the survey, with the forms to grant and revoke."""
    record, resolved = survey_or_404(survey_id, "grant")
    grants = accounts.people(get_store(), principal(), survey_id)
    return render_template(
        "people.html",
        record=record,
        survey=resolved,
        grants=grants,
        roles=("analyst", "owner"),
        error=error,
        account=(request.form.get("account") or "")[:100] if error else "",
        **survey_nav(survey_id),
    ), status


def _refused_on(survey_id: str) -> Any:
    """Show a refused grant or revoke (an unknown account, a bad role, the last owner) on the
    People page, with the refusal's status."""

    def render(exc: ActionError) -> Any:
        return _people_page(survey_id, error=str(exc), status=refusal_status(exc))

    return shown_on(render, EVERY_KIND)


@bp.route("/surveys/<survey_id>/people")
def people(survey_id: str) -> Any:
    """Who has which role on the survey: for its owners and admins."""
    return _people_page(survey_id)


@bp.route("/surveys/<survey_id>/people", methods=["POST"])
def grant(survey_id: str) -> Any:
    """Give an account (by name) a role on the survey; a refusal (an unknown account, a bad
    role) is said on the People page."""
    survey_or_404(survey_id, "grant")
    name = (request.form.get("account") or "").strip()
    role = request.form.get("role") or ""
    with _refused_on(survey_id):
        made = accounts.grant(get_store(), principal(), survey_id, name, role)
    flash(f"{made.account} is now {made.role} on this survey.")
    return redirect(url_for("dashboard.people", survey_id=survey_id))


@bp.route("/surveys/<survey_id>/people/revoke", methods=["POST"])
def revoke(survey_id: str) -> Any:
    """Take an account's role on the survey away (never its last owner's: said on the page)."""
    survey_or_404(survey_id, "grant")
    name = (request.form.get("account") or "").strip()
    with _refused_on(survey_id):
        accounts.revoke(get_store(), principal(), survey_id, name)
    flash(f"{name} no longer has a role on this survey.")
    if access.may(principal(), access.role_on(get_store(), principal(), survey_id), "grant"):
        return redirect(url_for("dashboard.people", survey_id=survey_id))
    return redirect(url_for("dashboard.surveys"))  # an owner who revoked itself
