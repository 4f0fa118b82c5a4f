"""Binary HTTP (RFC 9292), known-length messages: the request and response inside OHTTP.

An Oblivious HTTP request (shared/ohttp.py) carries one HTTP request in this encoding, and its
answer one response (docs/anonymity.md). Only the known-length form is written or read (an
indeterminate-length message is refused with a clear error); trailing empty sections may be
left out and zero padding may follow, as RFC 9292 allows. Field names are lower case.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from deniable.shared.errors import DeniableError

#: Framing indicators (RFC 9292 section 3.3).
KNOWN_REQUEST = 0
KNOWN_RESPONSE = 1
#: The largest value a QUIC variable-length integer holds.
MAX_VARINT = (1 << 62) - 1

Fields = tuple[tuple[str, str], ...]


class BinaryHTTPError(DeniableError, ValueError):
    """A Binary HTTP message that cannot be read: the message says what is wrong."""


@dataclass(frozen=True)
class Request:
    """An HTTP request: method, scheme, authority, path, header fields and content."""

    method: str
    scheme: str
    authority: str
    path: str
    headers: Fields = ()
    content: bytes = b""

    def header(self, name: str) -> str | None:
        """The first value of header field `name` (any case), or None."""
        return _first(self.headers, name)


@dataclass(frozen=True)
class Response:
    """An HTTP response: final status, header fields and content (informational ones dropped)."""

    status: int
    headers: Fields = ()
    content: bytes = b""
    informational: tuple[int, ...] = field(default=(), compare=False)

    def header(self, name: str) -> str | None:
        """The first value of header field `name` (any case), or None."""
        return _first(self.headers, name)


def _first(fields: Fields, name: str) -> str | None:
    wanted = name.lower()
    return next((value for key, value in fields if key == wanted), None)


def encode_varint(value: int) -> bytes:
    """A QUIC variable-length integer (RFC 9000 section 16), in its shortest form."""
    if not 0 <= value <= MAX_VARINT:
        raise BinaryHTTPError(f"{value} does not fit a variable-length integer")
    for prefix, size in ((0x00, 1), (0x40, 2), (0x80, 4), (0xC0, 8)):
        if value < 1 << (8 * size - 2):
            data = bytearray(value.to_bytes(size, "big"))
            data[0] |= prefix
            return bytes(data)
    raise AssertionError("unreachable")  # pragma: no cover


def _bytes(data: bytes) -> bytes:
    return encode_varint(len(data)) + data


def _fields(fields: Sequence[tuple[str, str]]) -> bytes:
    body = b"".join(
        _bytes(name.lower().encode("ascii")) + _bytes(value.encode("latin-1"))
        for name, value in fields
    )
    return _bytes(body)


def encode_request(request: Request) -> bytes:
    """The known-length encoding of `request` (no trailers, no padding)."""
    control = b"".join(
        _bytes(part.encode("ascii"))
        for part in (request.method, request.scheme, request.authority, request.path)
    )
    return (
        encode_varint(KNOWN_REQUEST)
        + control
        + _fields(request.headers)
        + _bytes(request.content)
        + _fields(())
    )


def encode_response(response: Response) -> bytes:
    """The known-length encoding of `response` (no informational responses, no trailers)."""
    if not 200 <= response.status <= 599:
        raise BinaryHTTPError(f"a final status is 200 to 599, got {response.status}")
    return (
        encode_varint(KNOWN_RESPONSE)
        + encode_varint(response.status)
        + _fields(response.headers)
        + _bytes(response.content)
        + _fields(())
    )


class _Reader:
    """Reads a message's parts in order; `done` once only zero padding is left."""

    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.at = 0

    @property
    def done(self) -> bool:
        return self.at >= len(self.data)

    def varint(self, what: str) -> int:
        if self.done:
            raise BinaryHTTPError(f"the message ends before its {what}")
        first = self.data[self.at]
        size = 1 << (first >> 6)
        if self.at + size > len(self.data):
            raise BinaryHTTPError(f"the message ends inside its {what}")
        raw = bytearray(self.data[self.at : self.at + size])
        raw[0] &= 0x3F
        self.at += size
        return int.from_bytes(raw, "big")

    def take(self, length: int, what: str) -> bytes:
        if self.at + length > len(self.data):
            raise BinaryHTTPError(f"the message ends inside its {what}")
        out = bytes(self.data[self.at : self.at + length])
        self.at += length
        return out

    def text(self, what: str) -> str:
        raw = self.take(self.varint(what), what)
        try:
            return raw.decode("ascii")
        except UnicodeDecodeError:
            raise BinaryHTTPError(f"the {what} is not ASCII") from None

    def fields(self, what: str) -> Fields:
        """A known-length field section; an absent one (the message ended) is empty."""
        if self.done:
            return ()
        section = _Reader(self.take(self.varint(what), what))
        found: list[tuple[str, str]] = []
        while not section.done:
            name = section.take(section.varint(f"{what} name"), f"{what} name")
            value = section.take(section.varint(f"{what} value"), f"{what} value")
            try:
                found.append((name.decode("ascii").lower(), value.decode("latin-1")))
            except UnicodeDecodeError:
                raise BinaryHTTPError(f"a {what} name is not ASCII") from None
        return tuple(found)

    def content(self) -> bytes:
        if self.done:
            return b""
        return self.take(self.varint("content length"), "content")

    def end(self) -> None:
        """What is left must be zero padding."""
        if any(self.data[self.at :]):
            raise BinaryHTTPError("the message has bytes after its end that are not padding")


def _framing(reader: _Reader, expected: int, what: str) -> None:
    framing = reader.varint("framing indicator")
    if framing in (2, 3):
        raise BinaryHTTPError(
            f"an indeterminate-length {what} is not supported; send a known-length one"
        )
    if framing != expected:
        raise BinaryHTTPError(f"framing indicator {framing} is not a known-length {what}")


def decode_request(data: bytes) -> Request:
    """A known-length Binary HTTP request (BinaryHTTPError says what is wrong)."""
    reader = _Reader(data)
    _framing(reader, KNOWN_REQUEST, "request")
    method = reader.text("method")
    scheme = reader.text("scheme")
    authority = reader.text("authority")
    path = reader.text("path")
    headers = reader.fields("header field section")
    content = reader.content()
    reader.fields("trailer field section")
    reader.end()
    if not method:
        raise BinaryHTTPError("the request has no method")
    return Request(method, scheme, authority, path, headers, content)


def decode_response(data: bytes) -> Response:
    """A known-length Binary HTTP response (BinaryHTTPError says what is wrong)."""
    reader = _Reader(data)
    _framing(reader, KNOWN_RESPONSE, "response")
    informational: list[int] = []
    while True:
        status = reader.varint("status code")
        if 100 <= status <= 199:
            informational.append(status)
            reader.fields("informational field section")
            continue
        if not 200 <= status <= 599:
            raise BinaryHTTPError(f"status {status} is not an HTTP status")
        break
    headers = reader.fields("header field section")
    content = reader.content()
    reader.fields("trailer field section")
    reader.end()
    return Response(status, headers, content, tuple(informational))
