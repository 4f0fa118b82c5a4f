"""Canonical JSON, hashes and base64url: the byte-exact encodings both sides must agree on."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any


def canonical_json(obj: Any) -> bytes:
    """The canonical bytes of a JSON value (DESIGN: sorted keys, no spaces, UTF-8)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of some bytes."""
    return hashlib.sha256(data).hexdigest()


def b64url_encode(data: bytes) -> str:
    """base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str, *, length: int | None = None) -> bytes:
    """Strict base64url (no padding) to bytes; ValueError when malformed or of the wrong length."""
    if not isinstance(text, str) or not text.isascii() or "=" in text:
        raise ValueError("not unpadded base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise ValueError("not unpadded base64url") from exc
    if b64url_encode(data) != text:
        raise ValueError("not canonical base64url")
    if length is not None and len(data) != length:
        raise ValueError(f"decodes to {len(data)} bytes, expected {length}")
    return data
