"""`deniable verify-page URL`: is the respondent web page's code the code you installed?

The page (/s/<survey>) randomizes in the browser with scripts the aggregator serves, so a
respondent trusts the aggregator's code. This compares the served scripts, byte for byte, with
the copies shipped in the installed deniable package (found without importing the aggregator,
so it works on a client-only install).
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import requests

from deniable.client.errors import ClientError
from deniable.client.http import Api
from deniable.client.urls import normalize_url

#: The page's scripts: the protocol module and the page logic that reads the form.
SCRIPTS = ("deniable.js", "respond.js")


@dataclass(frozen=True)
class ScriptCheck:
    """One served script beside the installed copy."""

    name: str
    url: str
    served_sha256: str
    installed_sha256: str

    @property
    def same(self) -> bool:
        return self.served_sha256 == self.installed_sha256


def installed_script(name: str) -> bytes:
    """The installed package's copy of a page script."""
    spec = importlib.util.find_spec("deniable.aggregator")  # finds, does not import, the package
    if spec is None or not spec.submodule_search_locations:
        raise ClientError("the installed deniable has no copy of the page's scripts to compare")
    path = Path(next(iter(spec.submodule_search_locations))) / "web" / "static" / name
    try:
        return path.read_bytes()
    except OSError:
        raise ClientError(f"the installed deniable has no {name} ({path})") from None


def server_of(url: str) -> str:
    """The aggregator's base URL from a page URL (or the base URL itself)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ClientError(f"expected the page's address, like https://host/s/SURVEY, got {url!r}")
    return normalize_url(f"{parts.scheme}://{parts.netloc}")


def verify_page(url: str, session: requests.Session | None = None) -> list[ScriptCheck]:
    """Fetch the page's scripts from the aggregator at `url` and compare them with the installed
    copies; a check per script (ClientError when the server cannot be read)."""
    server = server_of(url)
    api = Api(server, session or requests.Session())
    checks = []
    for name in SCRIPTS:
        response = api._request("GET", f"/static/{name}", advice="check the address")
        if response.status_code != 200:
            raise ClientError(f"{server}/static/{name} answered HTTP {response.status_code}")
        checks.append(
            ScriptCheck(
                name,
                f"{server}/static/{name}",
                hashlib.sha256(response.content).hexdigest(),
                hashlib.sha256(installed_script(name)).hexdigest(),
            )
        )
    return checks
