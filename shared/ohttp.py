"""Oblivious HTTP (RFC 9458): key configurations and the encapsulation of one request and its
response, for the client (encapsulate, open the answer) and the gateway (decapsulate, seal the
answer). HPKE (RFC 9180) is pyhpke's, in the one suite deniable uses: DHKEM(X25519,
HKDF-SHA256), HKDF-SHA256, AES-128-GCM; the response's key derivation is RFC 9458 section 4.4
over `cryptography`'s HKDF and AES-GCM. Both are checked against the RFCs' test vectors
(tests/conformance/ohttp.json), as the browser's copy is (static/ohttp.js).
docs/anonymity.md says what this buys a respondent.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from hashlib import sha256

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand
from pyhpke import AEADId, CipherSuite, KDFId, KEMId, KEMKeyPair
from pyhpke.exceptions import PyHPKEError

from deniable.shared.errors import DeniableError

#: The suite: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM (RFC 9180 identifiers).
KEM_ID, KDF_ID, AEAD_ID = 0x0020, 0x0001, 0x0001
SUITE = CipherSuite.new(KEMId.DHKEM_X25519_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.AES128_GCM)
#: X25519 public and private keys, and the encapsulated key, in bytes.
NPK = 32
NSK = 32
#: AES-128-GCM's key and nonce sizes, and the response nonce (RFC 9458: max(Nn, Nk)).
NK, NN = 16, 12
RESPONSE_NONCE = max(NK, NN)
#: The media types (RFC 9458 section 9).
REQUEST_TYPE = "message/ohttp-req"
RESPONSE_TYPE = "message/ohttp-res"
KEYS_TYPE = "application/ohttp-keys"
#: The problem type a gateway answers for a key it does not have (RFC 9458 section 5.3).
KEY_PROBLEM = "https://iana.org/assignments/http-problem-types#ohttp-key"
_REQUEST_LABEL = b"message/bhttp request"
_RESPONSE_LABEL = b"message/bhttp response"
_HEADER = struct.Struct(">BHHH")  # key_id, kem_id, kdf_id, aead_id
#: Key configurations one application/ohttp-keys document may hold, at most.
MAX_CONFIGS = 16


class OHTTPError(DeniableError, ValueError):
    """An OHTTP message or key configuration that cannot be used. `kind` is "key" (a key or
    suite the gateway does not have), "malformed" or "decrypt" (it does not open: tampered,
    or sealed to another key)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class KeyConfig:
    """One key configuration (RFC 9458 section 3): a key id, the KEM and its public key, and
    the (KDF, AEAD) pairs the gateway takes with it."""

    key_id: int
    public_key: bytes
    kem_id: int = KEM_ID
    algorithms: tuple[tuple[int, int], ...] = ((KDF_ID, AEAD_ID),)

    @property
    def usable(self) -> bool:
        """Whether it offers deniable's suite."""
        return self.kem_id == KEM_ID and (KDF_ID, AEAD_ID) in self.algorithms

    def to_bytes(self) -> bytes:
        """The key configuration's encoding."""
        pairs = b"".join(struct.pack(">HH", kdf, aead) for kdf, aead in self.algorithms)
        return (
            struct.pack(">BH", self.key_id, self.kem_id)
            + self.public_key
            + struct.pack(">H", len(pairs))
            + pairs
        )


def _config(data: bytes) -> KeyConfig:
    """One key configuration, exactly `data` (OHTTPError "malformed" otherwise)."""
    if len(data) < 3:
        raise OHTTPError("malformed", "a key configuration is too short")
    key_id, kem_id = struct.unpack_from(">BH", data)
    if kem_id != KEM_ID:  # the only KEM whose key length is known here
        raise OHTTPError(
            "key", f"key {key_id} uses KEM 0x{kem_id:04x}; deniable needs DHKEM(X25519) 0x0020"
        )
    at = 3 + NPK
    if len(data) < at + 2:
        raise OHTTPError("malformed", f"key {key_id}'s configuration is cut short")
    public_key = data[3:at]
    (length,) = struct.unpack_from(">H", data, at)
    pairs = data[at + 2 :]
    if length != len(pairs) or length == 0 or length % 4:
        raise OHTTPError("malformed", f"key {key_id}'s list of algorithms is malformed")
    algorithms = tuple(struct.iter_unpack(">HH", pairs))
    return KeyConfig(key_id, public_key, kem_id, algorithms)  # type: ignore[arg-type]


def parse_key_configs(data: bytes) -> list[KeyConfig]:
    """An application/ohttp-keys document: key configurations, each after its 2-byte length."""
    configs: list[KeyConfig] = []
    at = 0
    while at < len(data):
        if at + 2 > len(data) or len(configs) >= MAX_CONFIGS:
            raise OHTTPError(
                "malformed", f"not an {KEYS_TYPE} document of at most {MAX_CONFIGS} keys"
            )
        (length,) = struct.unpack_from(">H", data, at)
        chunk = data[at + 2 : at + 2 + length]
        if len(chunk) != length:
            raise OHTTPError("malformed", "a key configuration is cut short")
        configs.append(_config(chunk))
        at += 2 + length
    if not configs:
        raise OHTTPError("malformed", "no key configuration")
    return configs


def encode_key_configs(configs: Iterable[KeyConfig]) -> bytes:
    """The application/ohttp-keys document of these configurations."""
    out = b""
    for config in configs:
        raw = config.to_bytes()
        out += struct.pack(">H", len(raw)) + raw
    return out


def keys_text(configs: Iterable[KeyConfig]) -> str:
    """A survey's `ohttp_keys`: the application/ohttp-keys document in base64."""
    return base64.b64encode(encode_key_configs(configs)).decode("ascii")


def parse_keys_text(text: object) -> KeyConfig:
    """The configuration to encapsulate to, from a survey's `ohttp_keys` (base64 of an
    application/ohttp-keys document): the first that offers deniable's suite."""
    if not isinstance(text, str) or not text or len(text) > 4096:
        raise OHTTPError("malformed", "expected the base64 of an application/ohttp-keys document")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise OHTTPError("malformed", "not base64 (A-Z, a-z, 0-9, + and /, = padding)") from None
    for config in parse_key_configs(raw):
        if config.usable:
            return config
    raise OHTTPError("key", "no key offers DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM")


@dataclass(frozen=True)
class GatewayKey:
    """A gateway's key: its id and X25519 private key; `config` is what clients are given."""

    key_id: int
    private_key: bytes

    @property
    def config(self) -> KeyConfig:
        """The key configuration of this key (deniable's suite only)."""
        return KeyConfig(self.key_id, _public_of(self.private_key))


def _public_of(private_key: bytes) -> bytes:
    return X25519PrivateKey.from_private_bytes(private_key).public_key().public_bytes_raw()


def new_gateway_key(key_id: int) -> GatewayKey:
    """A fresh X25519 key for the gateway (from the OS's secure source)."""
    if not 0 <= key_id <= 255:
        raise ValueError(f"a key id is 0 to 255, got {key_id}")
    return GatewayKey(key_id, X25519PrivateKey.generate().private_bytes_raw())


def _header(key_id: int) -> bytes:
    return _HEADER.pack(key_id, KEM_ID, KDF_ID, AEAD_ID)


def _info(header: bytes) -> bytes:
    return _REQUEST_LABEL + b"\x00" + header


def _response_key(secret: bytes, enc: bytes, nonce: bytes) -> tuple[bytes, bytes]:
    """RFC 9458 section 4.4: the AEAD key and nonce of a response."""
    prk = hmac.new(enc + nonce, secret, sha256).digest()  # HKDF-Extract(salt, secret)
    key = HKDFExpand(hashes.SHA256(), NK, b"key").derive(prk)
    aead_nonce = HKDFExpand(hashes.SHA256(), NN, b"nonce").derive(prk)
    return key, aead_nonce


class ClientRequest:
    """An encapsulated request as its sender keeps it: the bytes to send, and what opens the
    gateway's answer to it."""

    def __init__(self, encapsulated: bytes, enc: bytes, context: object) -> None:
        self.encapsulated = encapsulated
        self._enc = enc
        self._context = context

    def open_response(self, data: bytes) -> bytes:
        """The Binary HTTP response inside an encapsulated response (OHTTPError "decrypt" when
        it does not open: tampered, or not the answer to this request)."""
        if len(data) < RESPONSE_NONCE + 16:
            raise OHTTPError("malformed", "the encapsulated response is too short")
        secret = self._context.export(_RESPONSE_LABEL, RESPONSE_NONCE)  # type: ignore[attr-defined]
        key, nonce = _response_key(secret, self._enc, data[:RESPONSE_NONCE])
        try:
            return AESGCM(key).decrypt(nonce, data[RESPONSE_NONCE:], b"")
        except InvalidTag:
            raise OHTTPError("decrypt", "the response does not open: it was changed") from None


def encapsulate_request(
    config: KeyConfig, request: bytes, *, ephemeral: bytes | None = None
) -> ClientRequest:
    """Encapsulate a Binary HTTP request to a gateway's key (RFC 9458 section 4.3).
    `ephemeral` (an X25519 private key) is for test vectors only: the default is fresh."""
    if not config.usable:
        raise OHTTPError("key", f"key {config.key_id} does not offer deniable's suite")
    header = _header(config.key_id)
    pkr = SUITE.kem.deserialize_public_key(config.public_key)
    eks = None
    if ephemeral is not None:
        sk = SUITE.kem.deserialize_private_key(ephemeral)
        eks = KEMKeyPair(sk, SUITE.kem.deserialize_public_key(_public_of(ephemeral)))
    enc, context = SUITE.create_sender_context(pkr, _info(header), eks=eks)
    sealed = context.seal(request, b"")
    return ClientRequest(header + enc + sealed, enc, context)


class GatewayRequest:
    """A decapsulated request: the Binary HTTP request, and what seals the answer to it."""

    def __init__(self, request: bytes, key_id: int, enc: bytes, context: object) -> None:
        self.request = request
        self.key_id = key_id
        self._enc = enc
        self._context = context

    def seal_response(self, response: bytes, *, nonce: bytes | None = None) -> bytes:
        """The encapsulated response to this request. `nonce` is for test vectors only."""
        nonce = secrets.token_bytes(RESPONSE_NONCE) if nonce is None else nonce
        secret = self._context.export(_RESPONSE_LABEL, RESPONSE_NONCE)  # type: ignore[attr-defined]
        key, aead_nonce = _response_key(secret, self._enc, nonce)
        return nonce + AESGCM(key).encrypt(aead_nonce, response, b"")


def decapsulate_request(keys: Mapping[int, GatewayKey], data: bytes) -> GatewayRequest:
    """Open an encapsulated request with the gateway's keys by id (OHTTPError "key" for a key
    or suite it does not have, "malformed" or "decrypt" for one that does not open)."""
    size = _HEADER.size + NPK
    if len(data) < size + 16:
        raise OHTTPError("malformed", "the encapsulated request is too short")
    key_id, kem_id, kdf_id, aead_id = _HEADER.unpack_from(data)
    if (kem_id, kdf_id, aead_id) != (KEM_ID, KDF_ID, AEAD_ID):
        raise OHTTPError("key", "the request uses a suite this gateway does not take")
    key = keys.get(key_id)
    if key is None:
        raise OHTTPError(
            "key", f"key {key_id} is not one this gateway holds (it was rotated out, or never was)"
        )
    header, enc = data[: _HEADER.size], data[_HEADER.size : size]
    try:
        skr = SUITE.kem.deserialize_private_key(key.private_key)
        context = SUITE.create_recipient_context(enc, skr, _info(header))
        request = context.open(data[size:], b"")
    except (PyHPKEError, ValueError):
        raise OHTTPError("decrypt", "the request does not open: it was changed") from None
    return GatewayRequest(request, key_id, enc, context)
