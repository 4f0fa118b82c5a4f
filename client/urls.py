"""Server addresses as the client keys them: one text per server, however it was spelled."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from urllib3.util import parse_url

from deniable.client.errors import ClientError

_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str:
    """The server URL as the ledger keys it: scheme and host lower-cased, no default port
    (http://host:80 is http://host), the port without leading zeros, no trailing slash."""
    text = url.strip()
    if "://" not in text:
        raise ClientError(f"{url!r} is not a server address; give one like http://127.0.0.1:8000")
    try:
        parts = urlsplit(text)
        host, port = parse_url(text).host, parts.port
    except ValueError:  # urllib3's LocationParseError is one too
        host, port = None, None
        parts = urlsplit("")
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.netloc or not host or not parts.hostname:
        raise ClientError(f"{url!r} is not an http(s) address; give one like https://example.org")
    if port == 0:
        raise ClientError(f"{url!r} has no usable port; give one from 1 to 65535")
    userinfo, at, _ = parts.netloc.rpartition("@")
    hostname = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = f"{userinfo}{at}{hostname}".lower()
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc += f":{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


def same_server(stored: str, url: str) -> bool:
    """Whether two addresses name one server (`stored` may predate today's normalize_url)."""
    if stored == url:
        return True
    try:
        return normalize_url(stored) == normalize_url(url)
    except ClientError:
        return False
