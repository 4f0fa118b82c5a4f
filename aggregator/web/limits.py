"""Abuse limits: rate limits on report and enrollment posts, and on failed dashboard logins.

Flask-Limiter keeps its counters in this process's memory only: no client address reaches the
database or the logs. With DENIABLE_RATE_LIMIT set (e.g. `60/minute`), every report or
enrollment POST counts once against its client address, and every report (each report of a
batch too) and enrollment counts once against its public key. Failed dashboard logins count
against the address (DENIABLE_LOGIN_LIMIT, default 10/minute) and each is answered after a
short delay. Over a limit: 429 problem+json with Retry-After.
"""

from __future__ import annotations

import json
import logging
import math
import time
from functools import partial
from typing import Any

from flask import Flask, Response, current_app, request
from flask_limiter import Limiter
from flask_limiter.errors import RateLimitExceeded
from flask_limiter.util import get_remote_address
from limits import parse_many
from werkzeug.middleware.proxy_fix import ProxyFix

from deniable.aggregator.web.problems import Problem, problem_response

EXTENSION = "deniable.limiter"
#: Endpoints whose POSTs are limited per address and per public key.
LIMITED = ("api.reports", "api.enrollments")
LOGIN = "dashboard.login"


def _retry_after(reset_at: float) -> str:
    return str(max(1, math.ceil(reset_at - time.time())))


def _public_keys(body: bytes) -> list[str]:
    """The public_key of each report (or the enrollment) in a request body; [] if unreadable."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return []
    if isinstance(value, dict) and isinstance(value.get("reports"), list):
        value = value["reports"]
    items = value if isinstance(value, list) else [value]
    return [
        item["public_key"][:64]
        for item in items
        if isinstance(item, dict) and isinstance(item.get("public_key"), str)
    ]


def _limited_by_key(limiter: Limiter, rate: str) -> None:
    """Count each report's (or enrollment's) public key; 429 once one is over the limit."""
    if request.method != "POST" or request.endpoint not in LIMITED:
        return
    strategy = limiter.limiter
    for key in _public_keys(request.get_data(cache=True)):
        for item in parse_many(rate):
            if not strategy.hit(item, "deniable-key", key):
                reset_at, _ = strategy.get_window_stats(item, "deniable-key", key)
                raise Problem(
                    429,
                    f"too many reports or enrollments from one key (limit {item}); "
                    "wait and send again",
                    headers={"Retry-After": _retry_after(reset_at)},
                )


def _belongs_to(func: object, limiter: Limiter) -> bool:
    """Whether a hook is one of the limiter's (a bound method or a partial over it)."""
    return getattr(func, "__self__", None) is limiter or (
        isinstance(func, partial) and limiter in func.args
    )


def _too_many(exc: RateLimitExceeded) -> Response:
    limiter: Limiter = current_app.extensions[EXTENSION]
    current = limiter.current_limit
    retry = _retry_after(current.reset_at) if current else "60"
    return problem_response(
        429,
        f"too many requests from this address (limit {exc.description}); wait and send again",
        headers={"Retry-After": retry},
    )


def init_limits(app: Flask) -> Limiter:
    """Give the app its limiter, limits and proxy handling, as configured."""
    proxies = app.config.get("TRUSTED_PROXIES") or 0
    if proxies:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies)  # type: ignore[method-assign]
    limiter = Limiter(get_remote_address, app=app, storage_uri="memory://", headers_enabled=False)
    # Only the views wrapped below are limited, and each wrapper checks its own limit: drop
    # the app-wide before_request check, which would cost every request (reports too).
    app.before_request_funcs[None] = [
        f for f in app.before_request_funcs.get(None, []) if f != limiter._check_request_limit
    ]
    # Its after-request hook only applies deduct_when limits (the login's; headers are off),
    # and its per-request state lives on the request context: keep both hooks on the
    # dashboard's requests, off the report path.
    for funcs in (app.after_request_funcs, app.teardown_request_funcs):
        mine = [f for f in funcs.get(None, []) if _belongs_to(f, limiter)]
        funcs[None] = [f for f in funcs.get(None, []) if f not in mine]
        funcs.setdefault(LOGIN.split(".")[0], []).extend(mine)
    # Flask-Limiter logs the key (the client address) of every breach: keep addresses out.
    logging.getLogger("flask-limiter").setLevel(logging.ERROR)
    app.extensions[EXTENSION] = limiter
    app.register_error_handler(RateLimitExceeded, _too_many)
    rate = app.config.get("RATE_LIMIT")
    if rate:
        for endpoint in LIMITED:  # the wrapped view checks the limit (this app's views only)
            view = app.view_functions[endpoint]
            app.view_functions[endpoint] = limiter.limit(rate, methods=["POST"])(view)

        @app.before_request
        def _per_key() -> None:
            _limited_by_key(limiter, rate)

    login_rate = app.config.get("LOGIN_LIMIT")
    if login_rate and LOGIN in app.view_functions:
        app.view_functions[LOGIN] = limiter.limit(
            login_rate, methods=["POST"], deduct_when=lambda response: response.status_code == 401
        )(app.view_functions[LOGIN])
    delay = float(app.config.get("LOGIN_FAILURE_DELAY") or 0)

    def _slow_failed_login(response: Response) -> Any:
        if delay and request.endpoint == LOGIN and response.status_code == 401:
            time.sleep(delay)
        return response

    # Only dashboard responses can be a failed login: keep the hook off the report path.
    app.after_request_funcs.setdefault(LOGIN.split(".")[0], []).append(_slow_failed_login)

    return limiter
