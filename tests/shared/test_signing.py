"""Ed25519 verification: libsodium (the aggregator's) and OpenSSL (a client-only install's)
accept and refuse the same signatures."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.shared import signing
from deniable.shared.canonical import b64url_encode

VERIFIERS = [signing._sodium_verify, signing._openssl_verify]

#: RFC 8032, section 7.1, tests 1-3: (public key, message, signature).
RFC8032 = [
    (
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e3970"
        "1cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613"
        "d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
    (
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
        "af82",
        "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760"
        "984dc6594a7c15e9716ed28dc027beceea1ec40a",
    ),
]


def test_the_aggregator_verifies_with_libsodium() -> None:
    assert signing.verifier() == "libsodium"


@pytest.mark.parametrize("verify", VERIFIERS)
@pytest.mark.parametrize(("key", "message", "signature"), RFC8032)
def test_rfc8032_vectors_verify_and_their_alterations_do_not(verify, key, message, signature):
    key, message, signature = bytes.fromhex(key), bytes.fromhex(message), bytes.fromhex(signature)
    assert verify(key, signature, message)
    assert not verify(key, signature, message + b"\0")
    assert not verify(key, signature[:-1] + bytes([signature[-1] ^ 1]), message)
    assert not verify(bytes([key[0] ^ 1]) + key[1:], signature, message)
    high_s = signature[:63] + bytes([signature[63] | 0xF0])  # S >= the group order: malleable
    assert not verify(key, high_s, message)


@settings(max_examples=150, deadline=None)
@given(
    message=st.binary(max_size=600),
    flip=st.one_of(
        st.none(), st.tuples(st.sampled_from(["key", "signature", "message"]), st.integers(0, 4799))
    ),
)
def test_both_verifiers_agree(message: bytes, flip: tuple[str, int] | None) -> None:
    private = signing.generate_key()
    key = signing.public_key_bytes(signing.public_key_text(private))
    signature = private.sign(message)
    parts = {
        "key": bytearray(key),
        "signature": bytearray(signature),
        "message": bytearray(message),
    }
    if flip is not None and parts[flip[0]]:
        part = parts[flip[0]]
        bit = flip[1] % (8 * len(part))
        part[bit // 8] ^= 1 << (bit % 8)
    found = [
        v(bytes(parts["key"]), bytes(parts["signature"]), bytes(parts["message"]))
        for v in VERIFIERS
    ]
    assert found[0] == found[1]
    assert found[0] == (flip is None or not parts[flip[0]])


def test_verify_takes_the_wire_texts() -> None:
    private = signing.generate_key()
    text = signing.sign(private, b"proof")
    assert signing.verify(signing.public_key_text(private), text, b"proof")
    assert not signing.verify(signing.public_key_text(private), text, b"other")
    assert not signing.verify("not base64!", text, b"proof")
    assert not signing.verify(b64url_encode(bytes(32)), text, b"proof")  # small order
    assert not signing.verify(signing.public_key_text(private), text[:-2], b"proof")
