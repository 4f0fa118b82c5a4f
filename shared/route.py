"""A survey's delivery route: the relay its reports go through and the gateway key they are
encapsulated to (docs/anonymity.md). Both are fields of the survey document, `"relay"` and
`"ohttp_keys"`, and so part of its hash: no relay can substitute a key of its own. Only an open
survey may name a relay: an invitation links its report to whom it was sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from deniable.shared.errors import SurveyError
from deniable.shared.ohttp import KeyConfig, OHTTPError, parse_keys_text

RELAY_FIELD = "relay"
KEYS_FIELD = "ohttp_keys"
#: The longest relay URL a survey may name.
MAX_RELAY_URL = 2000


@dataclass(frozen=True)
class Route:
    """Where a survey's reports go: the relay's URL, and the gateway's key configuration as the
    survey names it (base64 of an application/ohttp-keys document)."""

    relay: str
    ohttp_keys: str

    @cached_property
    def config(self) -> KeyConfig:
        """The key configuration reports are encapsulated to."""
        return parse_keys_text(self.ohttp_keys)

    @property
    def relay_origin(self) -> str:
        """The relay's origin (scheme://host[:port]): what a page's CSP allows it to reach."""
        parts = urlsplit(self.relay)
        return f"{parts.scheme}://{parts.netloc}"

    def to_dict(self) -> dict[str, str]:
        """The two survey fields."""
        return {RELAY_FIELD: self.relay, KEYS_FIELD: self.ohttp_keys}


def check_relay_url(value: object) -> str:
    """A relay URL as a survey may name it: http(s), a host, no credentials, query or fragment."""
    if not isinstance(value, str) or not value or len(value) > MAX_RELAY_URL:
        raise SurveyError(
            f"{RELAY_FIELD}: expected the relay's URL (https://...), at most {MAX_RELAY_URL} "
            f"characters, got {value!r:.80}"
        )
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.username is not None
        or parts.query
        or parts.fragment
        or port == 0
        or any(c.isspace() or ord(c) < 0x20 for c in value)
    ):
        raise SurveyError(
            f"{RELAY_FIELD}: {value!r:.80} is not a relay URL; give one like "
            "https://relay.example.org/ (http or https, a host, no user, query or fragment)"
        )
    return value


def parse_route(doc: Mapping[str, Any], enrollment: str) -> Route | None:
    """The survey's route from its document, or None when it names no relay (SurveyError says
    what is wrong: a bad URL or key, one field without the other, an invite-only survey)."""
    relay, keys = doc.get(RELAY_FIELD), doc.get(KEYS_FIELD)
    if relay is None and keys is None:
        return None
    if relay is None:
        raise SurveyError(f"{KEYS_FIELD}: goes with {RELAY_FIELD} (the relay reports go through)")
    if enrollment != "open":
        raise SurveyError(
            f"{RELAY_FIELD}: only an open survey may send its reports through a relay: an "
            "invitation links its report to whom it was sent; use enrollment open, or leave "
            f"{RELAY_FIELD} out"
        )
    url = check_relay_url(relay)
    if keys is None:
        raise SurveyError(
            f"{KEYS_FIELD}: needed with {RELAY_FIELD}: the base64 of the aggregator's "
            "/.well-known/ohttp-keys (an aggregator fills it in when the survey is created there)"
        )
    try:
        parse_keys_text(keys)
    except OHTTPError as exc:
        raise SurveyError(f"{KEYS_FIELD}: {exc}") from None
    return Route(url, keys)
