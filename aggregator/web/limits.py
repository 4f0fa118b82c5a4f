"""Abuse limits: rate limits on reports and enrollments, and on failed dashboard logins.

Counters live where DENIABLE_RATE_LIMIT_STORAGE says (a Flask-Limiter storage URI): this
process's memory by default, or one Redis shared by every process and machine, so that a client
over a limit on one process is refused by all. No client address reaches the database or the
logs (in Redis, an address is a counter's key until its window ends). An unreachable Redis
answers reports and enrollments 503 with Retry-After (clients send them again later); failed
logins are then not counted. With DENIABLE_RATE_LIMIT set (e.g. `60/minute`), the limits count
reports, not requests: a POST of k reports (a batch) counts k against its client address (an
IPv6 address by its /64), and each report counts once against its public key; an enrollment
counts one against each. Reports and enrollments are counted apart per address. A request that
would pass a limit is refused whole and counts nothing: 429 problem+json with Retry-After (send
it again then, or a smaller batch now); a batch larger than the limit itself could never pass
and gets 413 (send smaller batches). An address already at its limit is refused before its body
is read. Reports a relay of DENIABLE_RELAY_ADDRESSES passes on through the OHTTP gateway count
against DENIABLE_RELAY_RATE_LIMIT per relay address instead (one relay carries many respondents;
docs/anonymity.md#rate-limits-and-relays), and against their keys as always. Failed dashboard
logins count against the address (DENIABLE_LOGIN_LIMIT, default 10/minute) and each is answered
after a short delay.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Sequence
from functools import partial
from ipaddress import IPv6Network, ip_address
from typing import Any

from flask import Flask, Response, current_app, request
from flask_limiter import Limiter
from flask_limiter.errors import RateLimitExceeded
from flask_limiter.util import get_remote_address
from limits import RateLimitItem, parse_many
from limits.errors import StorageError
from limits.strategies import RateLimiter
from werkzeug.middleware.proxy_fix import ProxyFix

from deniable.aggregator.web.problems import Problem, problem_response

EXTENSION = "deniable.limiter"
#: Where the app keeps its PostCounter (when DENIABLE_RATE_LIMIT, or DENIABLE_RELAY_RATE_LIMIT
#: with DENIABLE_RELAY_ADDRESSES, is set).
COUNTER = "deniable.post-counter"
#: The setting a 413 names for an address's own limit.
RATE_SETTING = "DENIABLE_RATE_LIMIT"
ENROLLMENTS = "api.enrollments"
#: The WSGI environ key the gateway sets on a report it opened (web/gateway.py): the request
#: came through /ohttp, and its address is the sender's (a relay's, perhaps).
RELAYED = "deniable.relayed"
LOGIN = "dashboard.login"

#: A limit is tested and then taken under this lock, so a refused request counts nothing and
#: concurrent requests of one process never take more than the limit together (with Redis,
#: requests on different processes may pass it together by one request's count at most).
_COUNTING = threading.Lock()
#: Seconds a client waits before sending again when the rate limits' storage is unreachable.
STORAGE_RETRY_AFTER = 5


#: An IPv6 client is counted by its /64, one subscriber's usual allocation: otherwise each of
#: its 2**64 addresses would have an allowance of its own.
IPV6_CLIENT_PREFIX = 64


def client_key(address: str) -> str:
    """The text an address is counted under: an IPv4 address as itself (as a dual-stack
    socket writes it too, ::ffff:a.b.c.d), an IPv6 address as its /64."""
    try:
        found = ip_address(address)
    except ValueError:
        return address
    mapped = getattr(found, "ipv4_mapped", None)
    if mapped is not None:
        return str(mapped)
    if found.version == 6:
        shift = 128 - IPV6_CLIENT_PREFIX
        return str(IPv6Network(((int(found) >> shift) << shift, IPV6_CLIENT_PREFIX)))
    return str(found)


def _storage_down() -> Problem:
    return Problem(
        503,
        "the rate limits' counters (DENIABLE_RATE_LIMIT_STORAGE) cannot be reached; send "
        "again later",
        headers={"Retry-After": str(STORAGE_RETRY_AFTER)},
    )


def _retry_after(reset_at: float) -> str:
    return str(max(1, math.ceil(reset_at - time.time())))


def _posted(kind: str, body: bytes, max_batch: int) -> tuple[int, list[str]]:
    """How many reports (or enrollments) a POST counts for, and their public keys. A body the
    endpoint refuses whole before any signature check (unreadable, an empty batch, a batch over
    DENIABLE_MAX_BATCH) counts one and no key."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return 1, []
    if kind == "reports" and isinstance(value, dict) and isinstance(value.get("reports"), list):
        value = value["reports"]
    items = value if kind == "reports" and isinstance(value, list) else [value]
    if not items or len(items) > max_batch:
        return 1, []
    keys = [
        item["public_key"][:64]
        for item in items
        if isinstance(item, dict) and isinstance(item.get("public_key"), str)
    ]
    return len(items), keys


def _refuse_over(
    strategy: RateLimiter, items: list[RateLimitItem], who: tuple[str, ...], cost: int, what: str
) -> None:
    """Raise a 429 if taking `cost` from `who`'s counters would pass one of the limits."""
    for item in items:
        if not strategy.test(item, *who, cost=cost):
            reset_at, remaining = strategy.get_window_stats(item, *who)
            raise Problem(
                429,
                f"too many {what} (limit {item}; this request counts {cost}, "
                f"{remaining} left now); wait and send again",
                headers={"Retry-After": _retry_after(reset_at)},
            )


def listed_relay(address: str, relays: Sequence[Any]) -> str | None:
    """The relay `address` is, when it is in `relays` (DENIABLE_RELAY_ADDRESSES' networks), as
    one text for its counter (an IPv4 address as a dual-stack socket writes it,
    ::ffff:a.b.c.d, is the same relay); None otherwise."""
    try:
        found = ip_address(address)
    except ValueError:
        return None
    found = getattr(found, "ipv4_mapped", None) or found
    return str(found) if any(found in network for network in relays) else None


class PostCounter:
    """Counts the report or enrollment POSTs of this process against DENIABLE_RATE_LIMIT: per
    client address (k for a batch of k) and per public key; reports a listed relay passes on
    through the gateway against DENIABLE_RELAY_RATE_LIMIT per relay address instead. The report
    endpoint and the enrollment view both ask it, in two steps: `admit` before the body is
    read, `charge` with the body."""

    def __init__(
        self,
        strategy: RateLimiter,
        rate: str | None,
        max_batch: int,
        *,
        relay_rate: str | None = None,
        relays: tuple[Any, ...] = (),
    ):
        self.strategy = strategy
        self.items = parse_many(rate) if rate else []
        self.relay_items = parse_many(relay_rate) if relay_rate else []
        self.relays = relays
        self.max_batch = max_batch

    def relay(self, address: str) -> str | None:
        """The relay `address` is, when it is in DENIABLE_RELAY_ADDRESSES (listed_relay)."""
        return listed_relay(address, self.relays)

    def _address_limit(
        self, kind: str, address: str, relayed: bool
    ) -> tuple[list[RateLimitItem], tuple[str, ...], str, str]:
        """The limits an address is counted against, its counter, what it counts and the
        setting: a listed relay's, for the reports it passes on through the gateway; else the
        address's own."""
        relay = self.relay(address) if relayed and kind == "reports" else None
        if relay is not None:
            who = ("deniable-address", "relayed", client_key(relay))
            return self.relay_items, who, "reports through this relay", "DENIABLE_RELAY_RATE_LIMIT"
        who = self._who(kind, client_key(address))
        return self.items, who, f"{kind} from this address", RATE_SETTING

    def admit(self, kind: str, address: str, *, relayed: bool = False) -> None:
        """Refuse (429) an address already at its limit: it costs no body read nor parse."""
        items, who, what, _ = self._address_limit(kind, address, relayed)
        with _COUNTING:
            try:
                _refuse_over(self.strategy, items, who, 1, what)
            except StorageError:
                raise _storage_down() from None

    def charge(self, kind: str, address: str, body: bytes, *, relayed: bool = False) -> None:
        """Take what the POST counts from its address and each report's key, or refuse it
        whole (429, or 413 for a batch no window admits) if one of them would pass the limit."""
        count, keys = _posted(kind, body, self.max_batch)
        items, who, what, setting = self._address_limit(kind, address, relayed)
        smallest = min(items, key=lambda item: item.amount, default=None)
        if smallest is not None and count > smallest.amount:
            raise Problem(
                413,
                f"a batch of {count} reports is more than the rate limit lets one address send "
                f"at once ({smallest}, {setting}); send batches of at most "
                f"{smallest.amount} reports",
            )
        charges = [(who, count, what, items)] + [
            (("deniable-key", key), n, "reports or enrollments from one key", self.items)
            for key, n in Counter(keys).items()
        ]
        with _COUNTING:
            try:
                for who, cost, what, limits in charges:
                    _refuse_over(self.strategy, limits, who, cost, what)
                for who, cost, _, limits in charges:
                    for item in limits:
                        self.strategy.hit(item, *who, cost=cost)
            except StorageError:
                raise _storage_down() from None

    @staticmethod
    def _who(kind: str, address: str) -> tuple[str, ...]:
        return ("deniable-address", kind, address)


def post_counter(app: Flask) -> PostCounter | None:
    """The app's counter of report and enrollment POSTs, when DENIABLE_RATE_LIMIT is set."""
    return app.extensions.get(COUNTER)


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


def trust_proxies(app: Flask) -> None:
    """Take the client address from DENIABLE_TRUSTED_PROXIES proxies' X-Forwarded-For: the
    outermost WSGI layer, so every path (the report endpoint too) sees the same address."""
    proxies = app.config.get("TRUSTED_PROXIES") or 0
    if proxies:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies)  # type: ignore[method-assign]


def init_limits(app: Flask) -> Limiter:
    """Give the app its limiter and limits, as configured."""
    # Storage errors come as StorageError (wrap_exceptions): reports and enrollments answer them
    # 503; the login limit lets the login through (swallow_errors) rather than lock everyone out.
    limiter = Limiter(
        lambda: client_key(get_remote_address()),
        app=app,
        storage_uri=app.config.get("RATE_LIMIT_STORAGE") or "memory://",
        storage_options={"wrap_exceptions": True},
        swallow_errors=True,
        headers_enabled=False,
    )
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
    relays = tuple(app.config.get("RELAY_ADDRESSES") or ())
    relay_rate = app.config.get("RELAY_RATE_LIMIT") if relays else None
    if rate or relay_rate:  # reports are counted by the report endpoint, enrollments here
        counter = app.extensions[COUNTER] = PostCounter(
            limiter.limiter,
            rate,
            app.config["MAX_BATCH"],
            relay_rate=relay_rate,
            relays=relays,
        )

        @app.before_request
        def _count_enrollments() -> None:
            if rate and request.method == "POST" and request.endpoint == ENROLLMENTS:
                address = get_remote_address()
                counter.admit("enrollments", address)
                counter.charge("enrollments", address, request.get_data(cache=True))

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
