"""Logging in with a researcher token (a session stored server-side) and out."""

from __future__ import annotations

from typing import Any

from flask import flash, redirect, render_template, request, url_for

from deniable.aggregator.refusals import ActionError
from deniable.aggregator.web import sessions
from deniable.aggregator.web.dashboard.base import EVERY_KIND, bp, shown_on


def _login_page(next_path: str, error: str | None = None) -> tuple[str, int]:
    """The login form, saying why the last token was refused (401) if one was."""
    return render_template("login.html", error=error, next=next_path), 401 if error else 200


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    """The login form; a valid researcher token starts a session (stored server-side). A
    dashboard page of this host to go back to after logging in keeps only the read-only query
    parameters the dashboard itself produces (sessions.safe_next)."""
    next_path = sessions.safe_next(request.values.get("next"))
    if request.method == "POST":
        token = (request.form.get("token") or "").strip()
        with shown_on(lambda exc: _login_page(next_path, str(exc)), EVERY_KIND):
            if not token:
                raise ActionError("unauthenticated", "Paste a researcher token.")
            sessions.log_in(token)
        return redirect(next_path)
    return _login_page(next_path)


@bp.route("/logout", methods=["POST"])
def logout() -> Any:
    """End the session, for every copy of its cookie."""
    sessions.log_out()
    flash("You are logged out.")
    return redirect(url_for("dashboard.login"))
