"""Dashboard sessions, kept server-side: the cookie holds a random id, the store its sha256.

Logging out deletes the stored session, so every copy of the cookie ends with it; revoking a
token (`deniable-aggregator token revoke`, the Accounts page) deletes the sessions opened with
it in the same transaction, and a session whose token has expired or been revoked is refused
on its next request; a session lasts DENIABLE_SESSION_HOURS from its login. A live session
speaks for its token's `Principal` (docs/accounts.md), kept on `flask.g` for the request. The
cookie never holds the token or its stored hash: only the session id and Flask-WTF's CSRF
secret, signed (and HttpOnly, SameSite=Strict, Secure over TLS: see dashboard.py).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlencode, urlsplit

from flask import current_app, g, request, session, url_for
from werkzeug.exceptions import HTTPException
from werkzeug.routing import RoutingException

from deniable.aggregator import access
from deniable.aggregator.access import Principal
from deniable.aggregator.credentials import digest
from deniable.aggregator.refusals import ActionError
from deniable.aggregator.stats.planning import MECHANISM_NAMES
from deniable.aggregator.web.db import get_store
from deniable.shared.survey import QUESTION_ID, format_timestamp

#: The key of the session id in the signed cookie.
SESSION_ID = "sid"
#: A session id as `new_session_id` makes them (256 random bits, URL-safe base64).
_SESSION_ID_FORM = re.compile(r"[A-Za-z0-9_-]{43}")


def new_session_id() -> str:
    """A random session id (256 bits); only its sha256 is stored."""
    return secrets.token_urlsafe(32)


def _times() -> tuple[datetime, timedelta]:
    return datetime.now(UTC), timedelta(hours=current_app.config["SESSION_HOURS"])


def log_in(token: str) -> Principal:
    """Open a session for a researcher token: a new id in a fresh cookie (any earlier content,
    a planted id included, is dropped); the principal it speaks for. ActionError
    unauthenticated, and nothing changed, if the token is unknown, revoked or expired (the
    message says which)."""
    store = get_store()
    now, lasts = _times()
    try:
        who = access.authenticate(store, token, format_timestamp(now))
    except ActionError:
        raise ActionError("unauthenticated", _refusal(token)) from None
    session_id = new_session_id()
    opened = store.open_session(
        digest(session_id), digest(token), format_timestamp(now), format_timestamp(now + lasts)
    )
    if not opened:  # revoked or expired meanwhile
        raise ActionError("unauthenticated", "that token was revoked or expired just now")
    session.clear()
    session[SESSION_ID] = session_id
    return who


def _refusal(token: str) -> str:
    """What the login page says of a token access.authenticate refused: unknown, revoked or
    expired, and what to do."""
    found = get_store().token_by_hash(digest(token))
    if found is None:
        return (
            "That token is not valid here. Ask an admin for one "
            "(`deniable-aggregator token create ACCOUNT` on the server)."
        )
    state = "revoked" if found.revoked_at is not None else "expired"
    return f"That token ({found.id}) has been {state}. Ask an admin for a new one."


def _session_hash() -> str | None:
    session_id = session.get(SESSION_ID)
    if not isinstance(session_id, str) or not _SESSION_ID_FORM.fullmatch(session_id):
        return None
    return digest(session_id)


def current_principal() -> Principal | None:
    """Who the request's session speaks for: its token's principal when the session is live
    (stored, younger than DENIABLE_SESSION_HOURS, its token neither revoked nor expired), else
    None, and a dead session is forgotten, in the store and the cookie. Resolved once a request
    and kept on `flask.g`."""
    if "dashboard_principal" in g:
        return g.dashboard_principal
    who = None
    hashed = _session_hash()
    if hashed is not None:
        now, lasts = _times()
        store = get_store()
        stamp = format_timestamp(now)
        stored = store.session_token(hashed, stamp, opened_after=format_timestamp(now - lasts))
        token = store.token_by_hash(stored) if stored is not None else None
        if token is not None and token.live(stamp):
            who = Principal.of_token(token)
    if who is None and SESSION_ID in session:
        session.pop(SESSION_ID)
    g.dashboard_principal = who
    return who


def logged_in() -> bool:
    """Whether the request's cookie names a live session (see current_principal)."""
    return current_principal() is not None


def log_out() -> None:
    """End the session for every copy of its cookie, and empty this cookie."""
    hashed = _session_hash()
    if hashed is not None:
        get_store().end_session(hashed, format_timestamp(datetime.now(UTC)))
    session.clear()
    g.dashboard_principal = None


# -- where a login returns to ----------------------------------------------------------------

#: The longest `next=` kept (a dashboard link is far shorter).
MAX_NEXT = 1000
#: A dashboard path as its routes make them: survey ids and fixed words, nothing encoded.
_PATH_FORM = re.compile(r"/[A-Za-z0-9._/-]{0,200}")
_NUMBER = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,9})?")


def _number(value: str) -> bool:
    return _NUMBER.fullmatch(value) is not None


def _question_id(value: str) -> bool:
    return QUESTION_ID.fullmatch(value) is not None


#: Per dashboard view, the query parameters a link may carry through the login, each with the
#: check its value must pass: the read-only choices of the dashboard's own links and forms.
NEXT_QUERY: dict[str, dict[str, Callable[[str], bool]]] = {
    "dashboard.survey": {"confidence": _number, "simultaneous": lambda v: v in ("0", "1")},
    "dashboard.download_csv": {"confidence": _number, "simultaneous": lambda v: v in ("0", "1")},
    "dashboard.analysis": {
        "confidence": _number,
        **dict.fromkeys(("question", "by", "first", "second"), _question_id),
    },
    "dashboard.new_survey": {
        **dict.fromkeys(("epsilon", "margin", "options", "confidence", "range"), _number),
        "mechanism": lambda v: v in MECHANISM_NAMES,
    },
}
#: Dashboard views a login never returns to.
_NOT_AFTER_LOGIN = ("dashboard.login", "dashboard.logout", "dashboard.static")


def safe_next(target: str | None) -> str:
    """Where a login returns to: a dashboard page of this host, with only the query parameters
    NEXT_QUERY allows for that page, each value checked; anything else is the survey list.

    A logged-out researcher may follow a link anyone wrote, so the query it carries must not
    reach a page after the login. Signing the queries the dashboard produces cannot cover its
    GET forms (the browser writes those queries from what the researcher chose or typed), so the
    rule is an allowlist instead: parameters that only choose what to read (a confidence level,
    question ids, the planner's numbers), with values that cannot hold free text. Free text
    (`candidates=`, a `formula=`) is dropped: the researcher types it again after logging in.
    """
    fallback = url_for("dashboard.surveys")
    if not target or len(target) > MAX_NEXT or not target.isprintable():
        return fallback  # isprintable: no CR/LF to split a header with
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or parts.fragment or not _PATH_FORM.fullmatch(parts.path):
        return fallback
    try:
        endpoint, _ = current_app.create_url_adapter(request).match(parts.path, method="GET")
    except (HTTPException, RoutingException):  # no such page, not a GET, or a redirect
        return fallback
    if not endpoint.startswith("dashboard.") or endpoint in _NOT_AFTER_LOGIN:
        return fallback
    allowed = NEXT_QUERY.get(endpoint, {})
    kept: dict[str, str] = {}
    try:
        fields = parse_qsl(parts.query, max_num_fields=len(allowed) * 2)
    except ValueError:  # more fields than a dashboard link has
        return parts.path
    for key, value in fields:
        check = allowed.get(key)
        if check is not None and key not in kept and check(value):
            kept[key] = value
    return parts.path + ("?" + urlencode(kept) if kept else "")
