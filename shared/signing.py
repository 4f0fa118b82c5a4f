"""Ed25519 keys and signatures, in the text forms the wire format uses (base64url, no padding)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from deniable.shared.canonical import b64url_decode, b64url_encode

PUBLIC_KEY_BYTES = 32
SIGNATURE_BYTES = 64


def generate_key() -> Ed25519PrivateKey:
    """A fresh Ed25519 private key from the operating system's secure random source."""
    return Ed25519PrivateKey.generate()


def private_key_bytes(key: Ed25519PrivateKey) -> bytes:
    """The 32 raw bytes of a private key (for storing it in a 0600 file)."""
    return key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def load_private_key(raw: bytes) -> Ed25519PrivateKey:
    """A private key from its 32 raw bytes."""
    return Ed25519PrivateKey.from_private_bytes(raw)


def public_key_text(key: Ed25519PrivateKey) -> str:
    """The base64url text of a private key's public half."""
    return b64url_encode(
        key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )


def sign(key: Ed25519PrivateKey, message: bytes) -> str:
    """The base64url Ed25519 signature of `message`."""
    return b64url_encode(key.sign(message))


_P = 2**255 - 19
#: The y coordinates (mod p) of the eight points of small order: 1 (the identity), p - 1
#: (order 2), 0 (order 4) and the two of order 8. A key there is no key: the all-zero key with
#: an all-zero signature "verifies" for about one message in five (RFC 8032 does not forbid
#: it; libsodium refuses these keys too).
_SMALL_ORDER_Y = frozenset(
    {
        0,
        1,
        _P - 1,
        2707385501144840649318225287225658788936804267575313519463743609750303402022,
        55188659117513257062467267217118295137698188065244968500265048394206261417927,
    }
)


def public_key_bytes(text: str) -> bytes:
    """The 32 bytes of a public key's base64url text; ValueError when malformed or of small
    order."""
    raw = b64url_decode(text, length=PUBLIC_KEY_BYTES)
    if (int.from_bytes(raw, "little") & ((1 << 255) - 1)) % _P in _SMALL_ORDER_Y:
        raise ValueError("a point of small order, not a usable Ed25519 public key")
    return raw


def _openssl_verify(key: bytes, signature: bytes, message: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(key).verify(signature, message)
    except (ValueError, InvalidSignature):
        return False
    return True


@cache
def _sodium() -> tuple[Callable[[bytes, bytes], bytes], type[Exception]] | None:
    """libsodium's signature check (PyNaCl, which comes with the aggregator's extra), imported
    on first use: a client-only install never needs it."""
    try:
        from nacl.bindings import crypto_sign_open
        from nacl.exceptions import BadSignatureError
    except ImportError:
        return None
    return crypto_sign_open, BadSignatureError


def _sodium_verify(key: bytes, signature: bytes, message: bytes) -> bool:
    found = _sodium()
    if found is None:
        raise RuntimeError("PyNaCl is not installed")
    open_signed, bad_signature = found
    try:
        open_signed(signature + message, key)
    except (bad_signature, ValueError, TypeError):
        return False
    return True


def verifier() -> str:
    """Which library checks signatures: "libsodium" where PyNaCl is installed (it verifies an
    Ed25519 signature in about half the CPU time of OpenSSL's, 56 against 104 us here, and
    verifying is most of ingesting a report), else "openssl"."""
    return "openssl" if _sodium() is None else "libsodium"


def verify_raw(key: bytes, signature: bytes, message: bytes) -> bool:
    """Whether `signature` is `key`'s Ed25519 signature of `message` (raw bytes)."""
    if _sodium() is None:
        return _openssl_verify(key, signature, message)
    return _sodium_verify(key, signature, message)


def verify(public_key: str, signature: str, message: bytes) -> bool:
    """Whether `signature` (base64url) is a valid signature of `message` by `public_key`."""
    try:
        key = public_key_bytes(public_key)
        raw_signature = b64url_decode(signature, length=SIGNATURE_BYTES)
    except ValueError:
        return False
    return verify_raw(key, raw_signature, message)
