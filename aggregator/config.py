"""Aggregator settings: defaults, and the DENIABLE_* environment variables that override them."""

from __future__ import annotations

import importlib.util
import ipaddress
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from deniable.shared.errors import DeniableError

DEFAULT_DATA_DIR = "./deniable-data"


class ConfigError(DeniableError):
    """A setting has a value the aggregator cannot use; the message names it and what is allowed."""


def _whole(name: str, low: int, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            bound = f"from {low}" + (f" to {high}" if high is not None else "")
            raise ConfigError(f"{name}: expected a whole number {bound}, got {text!r}")
        return value

    parse.kind = (
        f"whole number, {low} to {high}" if high is not None else f"whole number, at least {low}"
    )
    return parse


def _confidence(name: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value < 1:
            raise ConfigError(
                f"{name}: expected a confidence level between 0 and 1, like 0.95, got {text!r}"
            )
        return value

    parse.kind = "number between 0 and 1"
    return parse


def _seconds(name: str, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not 0 <= value <= high:
            raise ConfigError(f"{name}: expected seconds from 0 to {high:g}, got {text!r}")
        return value

    parse.kind = f"seconds, 0 to {high:g}"
    return parse


def _synchronous(name: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().upper()
        if value not in ("FULL", "NORMAL", "EXTRA"):
            raise ConfigError(f"{name}: expected FULL, NORMAL or EXTRA, got {text!r}")
        return value

    parse.kind = "FULL, NORMAL or EXTRA"
    return parse


def _rate(name: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        from limits import parse_many

        try:
            parse_many(text)
        except ValueError:
            raise ConfigError(
                f"{name}: expected a rate like 60/minute or '10/second;500/hour', got {text!r}"
            ) from None
        return text.strip()

    parse.kind = "rate"
    return parse


def _storage(name: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        from limits.storage import SCHEMES

        value = text.strip()
        scheme = urlsplit(value).scheme
        if "://" not in value or scheme not in SCHEMES or scheme.startswith("async+"):
            raise ConfigError(
                f"{name}: expected a storage URI like memory:// or redis://host:6379, got "
                f"{(scheme + '://...') if scheme else repr(value[:40])}"
            )
        if scheme.startswith("redis") and importlib.util.find_spec("redis") is None:
            raise ConfigError(
                f"{name}: {scheme}:// needs the Redis client: pip install 'deniable[redis]'"
            )
        return value

    parse.kind = "storage URI"
    return parse


#: At most this many origins: the list is written by hand, one per place hosting a page.
MAX_ORIGINS = 100

_HOST = re.compile(
    r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_origin(text: str) -> str:
    """`text` as a browser sends it in Origin: `scheme://host[:port]`, lower case, no default
    port. ValueError says what is wrong."""
    given = text.strip()
    if given == "*":
        raise ValueError(
            "'*' is not allowed: it would let any web page fetch surveys and send reports and "
            "enrollments from its visitors' browsers; list the origins that host your pages"
        )
    example = "like https://pages.example.org or http://localhost:8080"
    if any(char.isspace() or not char.isprintable() for char in given):
        raise ValueError(f"{given[:80]!r}: an origin has no spaces or control characters")
    if not given.isascii():
        raise ValueError(f"{given[:80]!r}: write the host in its ASCII (punycode) form, {example}")
    try:
        parts = urlsplit(given.removesuffix("/"))
        port = parts.port
    except ValueError:
        raise ValueError(f"{given[:80]!r} is not an origin; write one {example}") from None
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"{given[:80]!r}: expected an http or https origin, {example}")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{given[:80]!r}: an origin has no user or password; {example}")
    bracketed = parts.netloc.startswith("[")
    if not (bracketed and _ipv6(host)) and not _HOST.fullmatch(host):
        raise ValueError(f"{given[:80]!r}: not a host name; write an origin {example}")
    if parts.path or parts.query or parts.fragment or "?" in given or "#" in given:
        raise ValueError(f"{given[:80]!r}: an origin has no path, query or fragment; {example}")
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"{given[:80]!r}: the port must be from 1 to 65535")
    shown = f"[{host}]" if bracketed else host
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{shown}"
    return f"{scheme}://{shown}:{port}"


def _ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


def parse_origins(given: object) -> tuple[str, ...]:
    """The origins of DENIABLE_PAGE_ORIGINS (comma-separated text, or a list of them),
    normalized as browsers send them; empty when unset. ValueError says which one is wrong."""
    if given is None:
        return ()
    if not isinstance(given, str | list | tuple):
        raise ValueError(f"expected origins as text or a list, got {type(given).__name__}")
    items = given.split(",") if isinstance(given, str) else list(given)
    if not all(isinstance(item, str) for item in items):
        raise ValueError("expected origins as text, like https://pages.example.org")
    items = [item for item in items if item.strip()]
    if len(items) > MAX_ORIGINS:
        raise ValueError(f"at most {MAX_ORIGINS} origins, got {len(items)}")
    return tuple(dict.fromkeys(parse_origin(item) for item in items))


def _origins(name: str) -> Callable[[str], tuple[str, ...]]:
    def parse(text: str) -> tuple[str, ...]:
        try:
            return parse_origins(text)
        except ValueError as exc:
            raise ConfigError(f"{name}: {exc}") from None

    parse.kind = "origins, comma-separated"
    return parse


#: Relay addresses (DENIABLE_RELAY_ADDRESSES) at most.
MAX_RELAY_ADDRESSES = 100


def parse_networks(
    given: str | Iterable[Any],
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """IP addresses or networks (CIDR), comma-separated or a list of them (networks too);
    ValueError says which one is wrong."""
    listed = given.split(",") if isinstance(given, str) else list(given)
    items = [item.strip() if isinstance(item, str) else item for item in listed]
    items = [item for item in items if item != ""]
    if len(items) > MAX_RELAY_ADDRESSES:
        raise ValueError(f"at most {MAX_RELAY_ADDRESSES} addresses, got {len(items)}")
    found = []
    for item in items:
        try:
            network = ipaddress.ip_network(item, strict=False)
        except (ValueError, TypeError):
            raise ValueError(
                "expected an IP address or network like 203.0.113.7 or 2001:db8::/64, got "
                f"{item!r:.60}"
            ) from None
        written = ipaddress.ip_interface(item).ip if isinstance(item, str) else None
        if written is not None and int(written) != int(network.network_address):
            # 203.0.113.7/0 would be every address: say the network it names rather than guess.
            raise ValueError(f"{item!r:.60} names the network {network}; write that if meant")
        if network.prefixlen == 0:
            raise ValueError(
                f"{item!r:.60} is every address: anyone posting to /ohttp would have a relay's "
                "allowance; list the relays' own addresses"
            )
        # An IPv4 network written as IPv6 (::ffff:a.b.c.d) is the IPv4 one clients are seen from.
        mapped = getattr(network.network_address, "ipv4_mapped", None)
        if mapped is not None and network.prefixlen >= 96:
            network = ipaddress.ip_network((mapped, network.prefixlen - 96))
        found.append(network)
    return tuple(found)


def _networks(name: str) -> Callable[[str], tuple[Any, ...]]:
    def parse(text: str) -> tuple[Any, ...]:
        try:
            return parse_networks(text)
        except ValueError as exc:
            raise ConfigError(f"{name}: {exc}") from None

    parse.kind = "addresses, comma-separated"
    return parse


class Setting(NamedTuple):
    """One DENIABLE_* setting: variable, parser, default, type word, help (docs/settings.md)."""

    variable: str
    parse: Callable[[str], Any]
    default: Any
    type: str
    help: str


def _setting(
    variable: str, parse: Callable[[str], Any], default: Any, help: str, type: str = ""
) -> Setting:
    """A Setting whose type word is the parser's own (`kind`) unless one is given."""
    return Setting(variable, parse, default, type or getattr(parse, "kind", "text"), help)


#: Flask config key -> Setting (variable, parse, default, type, help); docs/settings.md renders it.
SETTINGS: dict[str, Setting] = {
    "DATA_DIR": _setting(
        "DENIABLE_DATA_DIR",
        str,
        DEFAULT_DATA_DIR,
        "The SQLite file, the session key and the data of one aggregator.",
        type="directory",
    ),
    "DATABASE_URL": _setting(
        "DENIABLE_DATABASE_URL",
        str,
        None,
        "`postgresql://…`: PostgreSQL instead of the SQLite file, shared by every machine "
        "(see [PostgreSQL](operations.md#postgresql-several-aggregators-one-database)).",
        type="URL",
    ),
    "MAX_CONTENT_LENGTH": _setting(
        "DENIABLE_MAX_BODY",
        _whole("DENIABLE_MAX_BODY", 1024),
        8 * 1024 * 1024,
        "Bytes of a request body; a larger body gets 413 before it is read.",
    ),
    # sent_at is truncated to the hour on the device, and an outbox may resend a day later.
    "CLOCK_SKEW": _setting(
        "DENIABLE_CLOCK_SKEW",
        _whole("DENIABLE_CLOCK_SKEW", 3600),
        2 * 24 * 3600,
        "Seconds a report's `sent_at` may be from the server's clock (2 days by default: "
        "`sent_at` is truncated to the hour on the device, and an outbox may resend a day later).",
    ),
    "CONFIDENCE": _setting(
        "DENIABLE_CONFIDENCE",
        _confidence("DENIABLE_CONFIDENCE"),
        0.95,
        "The confidence level of intervals when a request names none.",
    ),
    "MAX_BATCH": _setting(
        "DENIABLE_MAX_BATCH",
        _whole("DENIABLE_MAX_BATCH", 1, 100_000),
        1000,
        'Reports per `{"reports": [...]}` batch; more gets 413.',
    ),
    "MAX_INVITATIONS": _setting(
        "DENIABLE_MAX_INVITATIONS",
        _whole("DENIABLE_MAX_INVITATIONS", 1),
        10_000,
        "Invitation codes per invitations request.",
    ),
    "SECRET_KEY": _setting(
        "DENIABLE_SECRET_KEY",
        str,
        None,
        "Signs the dashboard's cookie (its session id and CSRF secret). Unset, a random key is "
        "made once in `DATA_DIR/secret_key`; with several machines, set the same value on each.",
        type="text",
    ),
    "BUSY_TIMEOUT": _setting(
        "DENIABLE_BUSY_TIMEOUT",
        _whole("DENIABLE_BUSY_TIMEOUT", 0),
        10_000,
        "Milliseconds a SQLite connection waits for another process's write lock (and a "
        "PostgreSQL connection for the pool) before a 503.",
    ),
    # FULL: an accepted report survives a power cut, as "nothing accepted is ever lost" promises.
    "SQLITE_SYNCHRONOUS": _setting(
        "DENIABLE_SQLITE_SYNCHRONOUS",
        _synchronous("DENIABLE_SQLITE_SYNCHRONOUS"),
        "FULL",
        "SQLite's `synchronous`; `FULL`: an accepted report survives a power cut.",
    ),
    # Page cache (MiB) of each worker's one writing SQLite connection: inserts into a large
    # survey's random-keyed indexes touch more pages than SQLite's 2 MiB default holds.
    "SQLITE_WRITER_CACHE_MIB": _setting(
        "DENIABLE_SQLITE_WRITER_CACHE_MIB",
        _whole("DENIABLE_SQLITE_WRITER_CACHE_MIB", 1, 65_536),
        64,
        "MiB of page cache for the one connection each worker commits reports through "
        "(SQLite's own default is 2 MiB): a large survey's inserts land on random pages of its "
        "two unique indexes, and at 120–160k reports this cache cut their CPU by 10–20%.",
    ),
    "RATE_LIMIT": _setting(
        "DENIABLE_RATE_LIMIT",
        _rate("DENIABLE_RATE_LIMIT"),
        None,
        "E.g. `60/minute` or `10/second;500/hour`; unset, no limits. It counts reports, not "
        "requests: per client address (an IPv6 address by its /64, one subscriber's usual "
        "allocation), a POST of k reports (a batch) counts k and an "
        "enrollment one (reports and enrollments counted apart); per public key, each report "
        "and each enrollment counts one. A request that would pass the limit is refused whole "
        "and counts nothing: 429 problem+json with `Retry-After` (send it then, or a smaller "
        "batch); a batch larger than the limit itself gets 413 (the Python client then sends "
        "its reports one by one). Counters live in `DENIABLE_RATE_LIMIT_STORAGE`.",
    ),
    "RATE_LIMIT_STORAGE": _setting(
        "DENIABLE_RATE_LIMIT_STORAGE",
        _storage("DENIABLE_RATE_LIMIT_STORAGE"),
        "memory://",
        "Where the rate limits' counters live (a Flask-Limiter storage URI): `memory://`, "
        "each worker's own; `redis://host:6379` (`rediss://` over TLS), one Redis that every "
        "worker and machine shares, so a client over the limit on one is refused by all (see "
        "[Growing past one machine](operations.md#growing-past-one-machine)). An unreachable "
        "Redis answers reports and enrollments 503 with `Retry-After`.",
    ),
    # Relays (docs/anonymity.md#rate-limits-and-relays): one address carrying many respondents.
    "RELAY_ADDRESSES": _setting(
        "DENIABLE_RELAY_ADDRESSES",
        _networks("DENIABLE_RELAY_ADDRESSES"),
        None,
        "The addresses (or networks, CIDR) of the relays you trust not to be one device, "
        "e.g. `203.0.113.7,2001:db8::/64`, at most 100. Reports these addresses pass on through "
        "the gateway (`POST /ohttp`) are not counted against `DENIABLE_RATE_LIMIT` per address "
        "(each still counts against its key) but against `DENIABLE_RELAY_RATE_LIMIT`. Unset, "
        "a relay's address is limited like any client's (see "
        "[Rate limits and relays](anonymity.md#rate-limits-and-relays)).",
    ),
    "RELAY_RATE_LIMIT": _setting(
        "DENIABLE_RELAY_RATE_LIMIT",
        _rate("DENIABLE_RELAY_RATE_LIMIT"),
        None,
        "Reports each address of `DENIABLE_RELAY_ADDRESSES` may pass on through the gateway, "
        "e.g. `6000/minute`; unset, no limit for them. Over it, a relayed report gets 429 with "
        "`Retry-After` (sealed, inside) and its client sends it again then.",
    ),
    # Failed dashboard logins allowed per client address (counted where the rate limits are),
    # and their delay.
    "LOGIN_LIMIT": _setting(
        "DENIABLE_LOGIN_LIMIT",
        _rate("DENIABLE_LOGIN_LIMIT"),
        "10/minute",
        "Failed dashboard logins per address; then 429 until the window passes.",
    ),
    "LOGIN_FAILURE_DELAY": _setting(
        "DENIABLE_LOGIN_FAILURE_DELAY",
        _seconds("DENIABLE_LOGIN_FAILURE_DELAY", 10),
        0.5,
        "Seconds each failed login waits before its answer.",
    ),
    # A dashboard session ends this many hours after its login, even from a copied cookie.
    "SESSION_HOURS": _setting(
        "DENIABLE_SESSION_HOURS",
        _whole("DENIABLE_SESSION_HOURS", 1, 24 * 365),
        12,
        "Hours a dashboard login lasts at most. Sessions are stored in the database (the "
        "cookie holds a random session id, never the token or its hash), so logging out ends "
        "every copy of the cookie and `revoke-token` ends every session opened with the token; "
        "lowering it ends older sessions at their next request.",
    ),
    # Reverse proxies in front that set X-Forwarded-For/-Proto (0: none, trust no header).
    "TRUSTED_PROXIES": _setting(
        "DENIABLE_TRUSTED_PROXIES",
        _whole("DENIABLE_TRUSTED_PROXIES", 0, 5),
        0,
        "Reverse proxies in front that set `X-Forwarded-For`/`-Proto` (see "
        "[Reverse proxy](operations.md#reverse-proxy-nginx)); never set it without a proxy "
        "that overwrites those headers.",
    ),
    # Raw reports older than this many days are purged (tallies and n stay); None keeps them.
    "RETENTION_DAYS": _setting(
        "DENIABLE_RETENTION_DAYS",
        _whole("DENIABLE_RETENTION_DAYS", 1),
        None,
        "Raw reports older than this many days are purged; unset, they are kept. Tallies stay "
        "(see [Retention](operations.md#retention)).",
    ),
    # Audit entries older than this many days are deleted; None keeps the log whole.
    "AUDIT_RETENTION_DAYS": _setting(
        "DENIABLE_AUDIT_RETENTION_DAYS",
        _whole("DENIABLE_AUDIT_RETENTION_DAYS", 1, 100_000),
        None,
        "Audit log entries older than this many whole days are deleted, hourly while serving "
        "and by `deniable-aggregator purge`; unset, the log is kept whole (see "
        "[Accounts](accounts.md#the-audit-log)).",
    ),
    # Work one request may ask for, checked before it starts (stats/limits.py, docs/security.md).
    "MAX_MODEL_COLUMNS": _setting(
        "DENIABLE_MAX_MODEL_COLUMNS",
        _whole("DENIABLE_MAX_MODEL_COLUMNS", 1, 100_000),
        200,
        "Columns of a regression's model matrix (intercept, dummies, interactions), counted "
        "from the formula, the questions' options and the covariate patterns before the "
        "matrix is built; over it the regression gets 422 naming this setting.",
    ),
    "MAX_MODEL_CELLS": _setting(
        "DENIABLE_MAX_MODEL_CELLS",
        _whole("DENIABLE_MAX_MODEL_CELLS", 1),
        20_000_000,
        "Cells of a regression's model matrix (covariate patterns × columns, 8 bytes each), "
        "checked before the matrix is built; over it the regression gets 422 naming this "
        "setting.",
    ),
    "MAX_DECODER_CELLS": _setting(
        "DENIABLE_MAX_DECODER_CELLS",
        _whole("DENIABLE_MAX_DECODER_CELLS", 1),
        8_000_000,
        "Cells of the text decoders one results request builds, candidates × (cells a "
        "candidate is read at + candidates) summed over the survey's text questions: `D (k + "
        "D)` for cms and hcms (k hash functions), `D (m h + D)` for rappor (m cohorts, h "
        "hashes), whatever the sketch's width ([What decoding costs]"
        "(statistics.md#what-decoding-costs)); 8 bytes each (a build peaks at about 40 bytes "
        "per cell; one build at a time per process), checked before any decoder is built: a "
        "results request (API, CSV, dashboard, CLI) whose `?candidates=` (with the survey's "
        "own) need more gets 413 naming this setting (ask for fewer candidates), and a new "
        "survey whose own candidates need more gets 422. A cms or hcms question of any size fits "
        "alone (at most 1,050 candidates, 1,000 own and 50 asked for, and 1,024 hash "
        "functions); the limit bounds many large ones together, and rappor's with many cohorts "
        "× hashes. Offline, `analyze(..., limits=Limits(max_decoder_cells=...))` sets it.",
    ),
    "DECODER_CACHE_BYTES": _setting(
        "DENIABLE_DECODER_CACHE_BYTES",
        _whole("DENIABLE_DECODER_CACHE_BYTES", 0),
        256 * 1024 * 1024,
        "Bytes of decoders kept between results requests (least recently used dropped first); "
        "a decoder larger than this is built for its request and not kept; 0 keeps none.",
    ),
    # At most the survey format's own maximum (shared/survey.py MAX_QUESTIONS): only lowers it.
    "MAX_QUESTIONS": _setting(
        "DENIABLE_MAX_QUESTIONS",
        _whole("DENIABLE_MAX_QUESTIONS", 1, 100),
        100,
        "Questions in one survey (the survey format's own maximum is 100: the setting only "
        "lowers it); a new survey with more gets 422 naming this setting.",
    ),
    "MAX_SURVEY_SKETCH_CELLS": _setting(
        "DENIABLE_MAX_SURVEY_SKETCH_CELLS",
        _whole("DENIABLE_MAX_SURVEY_SKETCH_CELLS", 1),
        262_144,
        "Sketch counters of all of one survey's text questions (hcms 2·k·m each, cms k·m + k, "
        "rappor m·k + m: the tally rows the store keeps and every batch of reports adds to); a "
        "new survey with more gets 422 naming this setting. The default holds two of the "
        "largest hcms sketches.",
    ),
    "MAX_SURVEY_BYTES": _setting(
        "DENIABLE_MAX_SURVEY_BYTES",
        _whole("DENIABLE_MAX_SURVEY_BYTES", 1024),
        8 * 1024 * 1024,
        "Bytes of one survey as stored (its canonical JSON, which every page and results "
        "request reads); an XLSForm's translations can make it far larger than the upload. A "
        "new survey over it gets 422 naming this setting.",
    ),
    # Pages hosted elsewhere (`deniable page export`) that may call the respondent endpoints.
    "PAGE_ORIGINS": _setting(
        "DENIABLE_PAGE_ORIGINS",
        _origins("DENIABLE_PAGE_ORIGINS"),
        None,
        "Origins (`scheme://host[:port]`, http or https, comma-separated) of pages hosted "
        "elsewhere, e.g. an exported page (`deniable page export`), that may fetch a survey, "
        "enroll and send reports from the browser (CORS on those three endpoints only; "
        "researcher routes never answer another origin). `*` is refused: list each origin. "
        "Unset, only the aggregator's own `/s/<id>` pages can send from a browser (see "
        "[CORS](operations.md#pages-hosted-elsewhere-cors)).",
    ),
}


def defaults() -> dict[str, Any]:
    """Every setting at its default value."""
    return {key: setting.default for key, setting in SETTINGS.items()}


def from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings given as DENIABLE_* environment variables, parsed; ConfigError if invalid."""
    found: dict[str, Any] = {}
    for key, setting in SETTINGS.items():
        text = environ.get(setting.variable)
        if text is not None and text != "":
            found[key] = setting.parse(text)
    return found


def resolve(config: Mapping[str, Any]) -> dict[str, Any]:
    """Checked, normalized values of settings given directly (e.g. create_app overrides)."""
    fixed: dict[str, Any] = {}
    data_dir = config.get("DATA_DIR") or DEFAULT_DATA_DIR
    fixed["DATA_DIR"] = str(Path(os.fspath(data_dir)).expanduser().absolute())
    confidence = config.get("CONFIDENCE")
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 < confidence < 1
    ):
        raise ConfigError(f"CONFIDENCE: expected a number between 0 and 1, got {confidence!r}")
    try:
        fixed["PAGE_ORIGINS"] = parse_origins(config.get("PAGE_ORIGINS"))
    except ValueError as exc:
        raise ConfigError(f"PAGE_ORIGINS: {exc}") from None
    relays = config.get("RELAY_ADDRESSES") or ()
    try:
        fixed["RELAY_ADDRESSES"] = parse_networks(relays)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"RELAY_ADDRESSES: {exc}") from None
    for key in ("MAX_BATCH", "CLOCK_SKEW", "MAX_INVITATIONS", "BUSY_TIMEOUT"):
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{key}: expected a whole number, got {value!r}")
    return fixed
