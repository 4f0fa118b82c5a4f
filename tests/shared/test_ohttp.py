"""HPKE and Oblivious HTTP against the RFCs' published vectors (tests/conformance/ohttp.json):
RFC 9180 Appendix A.1.1 for deniable's suite through pyhpke, RFC 9458 Appendix A through
deniable.shared.ohttp and .bhttp; then what a gateway must refuse."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from pyhpke import KEMKeyPair

from deniable.shared import bhttp, ohttp

VECTORS = json.loads((Path(__file__).parents[1] / "conformance" / "ohttp.json").read_text())
A1 = VECTORS["rfc9180"]
A = VECTORS["rfc9458"]
h = bytes.fromhex


def test_the_suite_is_rfc9180_a11s() -> None:
    assert (A1["kem_id"], A1["kdf_id"], A1["aead_id"]) == (
        ohttp.KEM_ID,
        ohttp.KDF_ID,
        ohttp.AEAD_ID,
    )


def test_hpke_derives_the_vectors_keys() -> None:
    receiver = ohttp.SUITE.kem.derive_key_pair(h(A1["ikmR"]))
    ephemeral = ohttp.SUITE.kem.derive_key_pair(h(A1["ikmE"]))
    assert receiver.private_key.to_private_bytes().hex() == A1["skRm"]
    assert receiver.public_key.to_public_bytes().hex() == A1["pkRm"]
    assert ephemeral.private_key.to_private_bytes().hex() == A1["skEm"]
    assert ephemeral.public_key.to_public_bytes().hex() == A1["pkEm"]


def _sender() -> tuple[bytes, object]:
    kem = ohttp.SUITE.kem
    pkr = kem.deserialize_public_key(h(A1["pkRm"]))
    eks = KEMKeyPair(
        kem.deserialize_private_key(h(A1["skEm"])), kem.deserialize_public_key(h(A1["pkEm"]))
    )
    return ohttp.SUITE.create_sender_context(pkr, h(A1["info"]), eks=eks)


def test_hpke_seals_and_opens_rfc9180_a11() -> None:
    enc, sender = _sender()
    assert enc.hex() == A1["enc"]
    skr = ohttp.SUITE.kem.deserialize_private_key(h(A1["skRm"]))
    receiver = ohttp.SUITE.create_recipient_context(enc, skr, h(A1["info"]))
    for step in A1["encryptions"]:  # sequence numbers 0, 1, 2 in order
        sealed = sender.seal(h(step["pt"]), h(step["aad"]))
        assert sealed.hex() == step["ct"]
        assert receiver.open(sealed, h(step["aad"])).hex() == step["pt"]
    for export in A1["exports"]:
        value = sender.export(h(export["exporter_context"]), export["L"])
        assert value.hex() == export["exported_value"]


def test_the_key_configuration_of_rfc9458() -> None:
    (config,) = ohttp.parse_key_configs(
        len(h(A["key_config"])).to_bytes(2, "big") + h(A["key_config"])
    )
    assert config.key_id == A["key_id"]
    assert config.public_key.hex() == A["pkR"]
    assert config.algorithms == ((1, 1), (1, 3))
    assert config.usable
    assert config.to_bytes().hex() == A["key_config"]
    gateway = ohttp.GatewayKey(A["key_id"], h(A["skR"]))
    assert gateway.config.public_key.hex() == A["pkR"]


def test_rfc9458_request_encapsulates_to_the_published_bytes() -> None:
    config = ohttp.KeyConfig(A["key_id"], h(A["pkR"]), algorithms=((1, 1), (1, 3)))
    request = ohttp.encapsulate_request(config, h(A["request"]), ephemeral=h(A["skE"]))
    assert request.encapsulated.hex() == A["encapsulated_request"]
    assert request.open_response(h(A["encapsulated_response"])).hex() == A["response"]


def test_rfc9458_gateway_decapsulates_and_answers_the_published_bytes() -> None:
    keys = {A["key_id"]: ohttp.GatewayKey(A["key_id"], h(A["skR"]))}
    opened = ohttp.decapsulate_request(keys, h(A["encapsulated_request"]))
    assert opened.request.hex() == A["request"]
    inner = bhttp.decode_request(opened.request)
    parts = A["request_parts"]
    assert (inner.method, inner.scheme, inner.authority, inner.path) == (
        parts["method"],
        parts["scheme"],
        parts["authority"],
        parts["path"],
    )
    assert bhttp.encode_request(inner).hex() == A["request"] + "000000"  # as ohttp.js writes it
    sealed = opened.seal_response(h(A["response"]), nonce=h(A["response_nonce"]))
    assert sealed.hex() == A["encapsulated_response"]
    assert bhttp.decode_response(h(A["response"])).status == A["response_status"]


def test_a_round_trip_with_fresh_keys_and_a_report_post() -> None:
    key = ohttp.new_gateway_key(7)
    text = ohttp.keys_text([key.config])
    config = ohttp.parse_keys_text(text)
    body = b'{"v":1}'
    message = bhttp.Request(
        "POST",
        "https",
        "agg.example",
        "/api/v1/reports",
        (("content-type", "application/json"),),
        body,
    )
    sent = ohttp.encapsulate_request(config, bhttp.encode_request(message))
    opened = ohttp.decapsulate_request({7: key}, sent.encapsulated)
    assert bhttp.decode_request(opened.request) == message
    answer = bhttp.Response(201, (("content-type", "application/json"),), b'{"result":"accepted"}')
    assert (
        bhttp.decode_response(
            sent.open_response(opened.seal_response(bhttp.encode_response(answer)))
        )
        == answer
    )


def test_every_tampered_byte_of_a_request_is_refused() -> None:
    key = ohttp.new_gateway_key(1)
    sent = ohttp.encapsulate_request(key.config, b"\x00" * 40).encapsulated
    for i in range(len(sent)):
        changed = bytearray(sent)
        changed[i] ^= 0x01
        with pytest.raises(ohttp.OHTTPError) as refused:
            ohttp.decapsulate_request({1: key}, bytes(changed))
        # The header names a key or suite; a changed key share or ciphertext does not open.
        assert refused.value.kind == ("key" if i < 7 else "decrypt")


def test_a_tampered_response_does_not_open() -> None:
    key = ohttp.new_gateway_key(1)
    sent = ohttp.encapsulate_request(key.config, b"request")
    answer = bytearray(ohttp.decapsulate_request({1: key}, sent.encapsulated).seal_response(b"ok"))
    answer[-1] ^= 0x80
    with pytest.raises(ohttp.OHTTPError, match="changed"):
        sent.open_response(bytes(answer))


def test_an_unknown_key_and_short_messages_are_refused_with_reasons() -> None:
    key = ohttp.new_gateway_key(1)
    other = ohttp.new_gateway_key(2)
    sent = ohttp.encapsulate_request(other.config, b"x").encapsulated
    with pytest.raises(ohttp.OHTTPError, match="key 2 is not one this gateway holds"):
        ohttp.decapsulate_request({1: key}, sent)
    with pytest.raises(ohttp.OHTTPError, match="too short"):
        ohttp.decapsulate_request({1: key}, sent[:20])


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("not base64!", "not base64"),
        ("", "expected the base64"),
        (base64.b64encode(b"\x00\x05abc").decode(), "cut short"),
        (base64.b64encode(b"\x00\x03\x01\x00\x10").decode(), "KEM 0x0010"),
    ],
)
def test_bad_ohttp_keys_say_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(ohttp.OHTTPError, match=words):
        ohttp.parse_keys_text(text)


def test_binary_http_refuses_what_it_does_not_read() -> None:
    with pytest.raises(bhttp.BinaryHTTPError, match="indeterminate-length"):
        bhttp.decode_request(b"\x02")
    with pytest.raises(bhttp.BinaryHTTPError, match="ends before its scheme"):
        bhttp.decode_request(bytes.fromhex("0003474554"))
    with pytest.raises(bhttp.BinaryHTTPError, match="ends inside its method"):
        bhttp.decode_request(bytes.fromhex("00034745"))
    with pytest.raises(bhttp.BinaryHTTPError, match="not padding"):
        bhttp.decode_response(bytes.fromhex("0140c8000000ff"))
    assert bhttp.decode_response(bytes.fromhex("0140c800000000")).status == 200  # padding


def test_rfc9292_known_length_request_example() -> None:
    """RFC 9292 section 5.1's known-length request (a GET with three header fields)."""
    data = bytes.fromhex(
        "0003474554056874747073000a2f68656c6c6f2e747874406c0a757365722d6167656e74346375726c2f372e"
        "31362e33206c69626375726c2f372e31362e33204f70656e53534c2f302e392e376c207a6c69622f312e322e"
        "3304686f73740f7777772e6578616d706c652e636f6d0f6163636570742d6c616e677561676506656e2c20"
        "6d690000"
    )
    request = bhttp.decode_request(data)
    assert (request.method, request.scheme, request.authority, request.path) == (
        "GET",
        "https",
        "",
        "/hello.txt",
    )
    assert request.header("Host") == "www.example.com"
    assert [name for name, _ in request.headers] == ["user-agent", "host", "accept-language"]
    assert bhttp.encode_request(request) == data
