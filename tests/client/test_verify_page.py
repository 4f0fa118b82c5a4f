"""`deniable verify-page URL`: the served page scripts against the installed copies."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_cli import run
from test_import_isolation import run as run_blocked

from deniable.client.page import SCRIPTS, installed_script


def test_the_served_page_is_the_installed_code(live_server: Any, home: Path) -> None:
    result = run(home, "verify-page", f"{live_server.url}/s/any-survey")
    assert result.returncode == 0, result.stderr
    for name in SCRIPTS:
        assert f"{name}: same" in result.stdout
    assert "The page's code is the code you installed." in result.stdout


@pytest.fixture
def altered_server(tmp_path: Path) -> Iterator[str]:
    """A server whose deniable.js is not the installed one (an attacker's, or another version)."""
    static = tmp_path / "static"
    static.mkdir()
    (static / "deniable.js").write_bytes(installed_script("deniable.js") + b"\n// sends truths\n")
    (static / "respond.js").write_bytes(installed_script("respond.js"))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_altered_code_is_reported_and_exits_1(altered_server: str, home: Path) -> None:
    result = run(home, "verify-page", f"{altered_server}/s/health")
    assert result.returncode == 1
    assert "deniable.js: DIFFERENT" in result.stdout and "respond.js: same" in result.stdout
    assert (
        result.stderr.startswith("error: deniable.js served by")
        and "do not answer" in result.stderr
    )
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/s/x", "not a url"])
def test_unreachable_or_bad_addresses_are_one_line(url: str, home: Path) -> None:
    result = run(home, "verify-page", url)
    assert result.returncode == 1 and result.stderr.startswith("error: ")
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_client_only_install_finds_its_copy_without_the_aggregator() -> None:
    result = run_blocked(
        "from deniable.client.page import installed_script\n"
        "import sys\n"
        "assert installed_script('deniable.js').startswith(b'//')\n"
        "assert 'deniable.aggregator' not in sys.modules and 'flask' not in sys.modules\n"
        "print('ok')\n"
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
