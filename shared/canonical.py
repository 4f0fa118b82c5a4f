"""Canonical JSON, hashes and base64url: the byte-exact encodings both sides must agree on."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from typing import Any

_B64URL_TEXT = re.compile(r"[A-Za-z0-9_-]*")
_FROM_URL = bytes.maketrans(b"-_", b"+/")
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
#: By the length of the last group (2 or 3 characters: 4 or 2 unused low bits), the last
#: characters whose unused bits are zero.
_CANONICAL_LAST = {2: frozenset(_ALPHABET[::16]), 3: frozenset(_ALPHABET[::4])}


def canonical_json(obj: Any) -> bytes:
    """The canonical bytes of a JSON value (docs/wire-format.md: sorted keys, no spaces, UTF-8)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


class JSONTextError(ValueError):
    """Text that is not one strict JSON value; the message says what is wrong."""


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: One decoder for every parse: json.loads with a keyword builds a new decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_no_constants)


def parse_json(text: str | bytes) -> Any:
    """One JSON value, strictly: UTF-8 bytes (RFC 8259; a BOM is skipped), NaN and Infinity
    refused, every string Unicode text (a lone surrogate escape is not), and nesting or numbers
    too big for the parser a JSONTextError, never a RecursionError or a crash further on."""
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise JSONTextError("not UTF-8 text") from None
    if text.startswith("\ufeff"):  # as json.loads says
        raise JSONTextError("Unexpected UTF-8 BOM: line 1 column 1 (char 0)")
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise JSONTextError("nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, NaN, an integer of more than 4300 digits
        raise JSONTextError(str(exc)[:200]) from None
    if "\\u" in text:  # only a \u escape can make a lone surrogate
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise JSONTextError(
                "a \\u escape is an unpaired surrogate, which is not text"
            ) from None
        except RecursionError:
            raise JSONTextError("nested too deeply") from None
    return value


def is_unicode(text: str) -> bool:
    """Whether a str is text UTF-8 can carry (JSON's "\\ud800" escape makes one that is not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of some bytes."""
    return hashlib.sha256(data).hexdigest()


def b64url_encode(data: bytes) -> str:
    """base64url without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str, *, length: int | None = None) -> bytes:
    """Strict base64url (no padding) to bytes; ValueError when malformed or of the wrong length."""
    if type(text) is not str or len(text) % 4 == 1 or not _B64URL_TEXT.fullmatch(text):
        raise ValueError("not unpadded base64url")
    # Unused low bits of the last character must be zero, or two texts name the same bytes.
    tail = len(text) % 4
    if tail and text[-1] not in _CANONICAL_LAST[tail]:
        raise ValueError("not canonical base64url")
    raw = text.encode("ascii")
    data = binascii.a2b_base64(raw.translate(_FROM_URL) + b"=" * (-len(raw) % 4))
    if length is not None and len(data) != length:
        raise ValueError(f"decodes to {len(data)} bytes, expected {length}")
    return data
