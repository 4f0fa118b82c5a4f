"""Researcher tokens and invitation codes: made from `secrets`, stored only as sha256 hashes."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable

#: Invitation codes are read aloud and typed: no 0/O, 1/I/L.
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_GROUPS = 3
CODE_GROUP_LENGTH = 4
#: Hex digits of a token's sha256 that name it in lists, revocation and the audit log
#: (48 bits: public, and not enough to find the token).
TOKEN_ID_CHARS = 12


def digest(secret: str) -> str:
    """The sha256 hex a token or code is stored as."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def token_id(token_hash: str) -> str:
    """The public id of a stored token: the first TOKEN_ID_CHARS hex digits of its sha256."""
    return token_hash[:TOKEN_ID_CHARS]


def new_token() -> str:
    """A researcher bearer token (256 bits)."""
    return secrets.token_urlsafe(32)


def new_invitation_code() -> str:
    """A single-use invitation code like K7QX-M2RT-9HCW (about 59 bits)."""
    groups = (
        "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_GROUP_LENGTH))
        for _ in range(CODE_GROUPS)
    )
    return "-".join(groups)


def normalize_code(code: str) -> str:
    """A typed code in its issued form: case, spaces and dashes do not matter."""
    plain = "".join(c for c in code.upper() if c.isalnum())
    size = CODE_GROUP_LENGTH
    return "-".join(plain[i : i + size] for i in range(0, len(plain), size))


def token_matches(token: str, known_hashes: Iterable[str]) -> bool:
    """Whether the token is one of the known ones, compared in constant time."""
    candidate = digest(token)
    found = False
    for known in known_hashes:
        found |= hmac.compare_digest(candidate, known)
    return found
