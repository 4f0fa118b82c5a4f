"""base64url: strict, canonical, round-trips."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deniable.shared.canonical import JSONTextError, b64url_decode, b64url_encode, parse_json


@given(st.binary(max_size=80))
def test_decode_inverts_encode(data: bytes) -> None:
    assert b64url_decode(b64url_encode(data)) == data


@given(st.text(max_size=12))
def test_any_text_decodes_only_when_it_is_the_canonical_encoding(text: str) -> None:
    try:
        data = b64url_decode(text)
    except ValueError:
        return
    assert b64url_encode(data) == text


def test_every_last_group_decodes_only_when_it_is_the_canonical_encoding() -> None:
    """All 64^2 + 64^3 last groups of 2 and 3 characters (after a full group), exhaustively:
    those with unused low bits set name the same bytes as another text, and are refused."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    refused = 0
    for tail in itertools.chain(
        itertools.product(alphabet, repeat=2), itertools.product(alphabet, repeat=3)
    ):
        text = "QUJD" + "".join(tail)
        try:
            data = b64url_decode(text)
        except ValueError:
            refused += 1
            continue
        assert b64url_encode(data) == text
    # 4 of 64 last characters are canonical after 1 byte (4 unused bits), 16 after 2 (2 unused)
    assert refused == 64 * 60 + 64 * 64 * 48


@pytest.mark.parametrize(
    "text",
    ["AB==", "AB=", "A", "ABC+", "ABC/", "AB C", "AB\n", "ABé", "AR", "AAB", None, b"AA"],
)
def test_refuses_padding_standard_alphabet_junk_and_non_canonical_bits(text: object) -> None:
    with pytest.raises(ValueError):
        b64url_decode(text)  # type: ignore[arg-type]


def test_length_is_checked() -> None:
    assert b64url_decode("AAA", length=2) == b"\0\0"
    with pytest.raises(ValueError, match="expected 3"):
        b64url_decode("AAA", length=3)


@pytest.mark.parametrize(
    "data",
    [
        '{"a": "\\ud800"}'.encode("utf-16"),  # UTF-16 would dodge a bytes-level escape check
        '{"a": "\\ud800"}'.encode("utf-32"),
        b'{"a": "\xff"}',
        b'{"a": "\\ud800"}',
        b'{"a": NaN}',
        b"[" * 50_000 + b"]" * 50_000,
        b'\xef\xbb\xbf\xef\xbb\xbf{"a": 1}',  # one byte order mark is skipped, not two
        b'{"a": 1} {"b": 2}',
        b'{"a": Infinity}',
    ],
)
def test_parse_json_refuses_what_is_not_strict_utf8_json(data: bytes) -> None:
    with pytest.raises(JSONTextError):
        parse_json(data)


def test_parse_json_takes_utf8_a_bom_and_real_pairs() -> None:
    assert parse_json(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}
    assert parse_json(b'{"a": "caf\\u00e9 \\ud83d\\ude00"}') == {"a": "café 😀"}
