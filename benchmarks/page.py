"""The respondent page: its weight and how fast it answers, for the aggregator's /s/<id> and for
an exported copy (`deniable page export`) served by a static server on another origin.

Weight: bytes of the HTML, JavaScript and CSS the page loads, as sent (compressed by the
aggregator when the browser accepts it; target at most 45 KB) and uncompressed (target under
100 KB), each file listed with `--files`. Speed: median time from the submit click to the receipt on screen, in Chromium
(Playwright with /usr/bin/chromium), each sample a fresh browser profile answering the 9
questions of tests/browser/test_respondent_page.py's survey (randomize, sign, store in
IndexedDB, POST, store the result; target at most 100 ms). The aggregator is a real
`deniable-aggregator run` on loopback with SQLite.

    .venv/bin/python benchmarks/page.py [--samples 25] [--weight-only] [--files]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CHROMIUM = os.environ.get("DENIABLE_CHROMIUM", "/usr/bin/chromium")
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from test_respondent_page import ANSWERS, DOC  # noqa: E402  (the tests' survey and answers)

WEIGHT_TARGET = 100_000
COMPRESSED_TARGET = 45_000
SPEED_TARGET_MS = 100.0


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_aggregator(data: Path, page_origin: str) -> tuple[subprocess.Popen[bytes], str, str]:
    """A real aggregator allowing `page_origin`; its process, URL and a researcher token."""
    env = {**os.environ, "DENIABLE_DATA_DIR": str(data), "DENIABLE_PAGE_ORIGINS": page_origin}
    env.pop("DENIABLE_DATABASE_URL", None)
    aggregator = str(BIN / "deniable-aggregator")
    token = subprocess.run(
        [aggregator, "create-token", "--name", "bench"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    port = free_port()
    proc = subprocess.Popen(
        [aggregator, "run", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if requests.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url, token
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("the aggregator did not start")


def static_server(directory: Path, port: int) -> http.server.ThreadingHTTPServer:
    """Serve `directory` on loopback (a static host for the exported page)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@dataclass(frozen=True)
class Weight:
    """What a page loads: per file, its bytes as sent and uncompressed."""

    files: dict[str, tuple[int, int]]

    @property
    def sent(self) -> int:
        return sum(sent for sent, _ in self.files.values())

    @property
    def uncompressed(self) -> int:
        return sum(size for _, size in self.files.values())

    def met(self, compressed: bool) -> bool:
        """Within the targets: uncompressed, and as sent when the server compresses (the
        aggregator does; a static host of an exported page may not)."""
        small = self.uncompressed < WEIGHT_TARGET
        return small and (not compressed or self.sent <= COMPRESSED_TARGET)


def page_weight(browser: Any, url: str) -> Weight:
    """The HTML, JavaScript and CSS the page at `url` loads: per file its body as sent (the
    encoded size: compressed when the server compressed it) and uncompressed."""
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    responses: list[Any] = []
    page.on("response", lambda response: responses.append(response))
    page.goto(url)
    page.wait_for_selector("button[type=submit]:enabled")
    page.wait_for_load_state("networkidle")
    files = {}
    for response in responses:
        if response.request.resource_type in ("document", "script", "stylesheet"):
            size = len(response.body())
            sent = response.request.sizes()["responseBodySize"]
            files[response.url] = (sent, size)
    context.close()
    return Weight(files)


def fill(page: Any) -> None:
    """Answer every question of the form."""
    for qid, value in ANSWERS.items():
        if isinstance(value, list):
            for label in value:
                page.locator(f'input[name="{qid}"][value="{label}"]').check()
        elif page.locator(f'input[name="{qid}"]:is([type="number"], [type="text"])').count():
            page.locator(f'input[name="{qid}"]').fill(value)
        else:
            page.locator(f'input[name="{qid}"][value="{value}"]').check()


SUBMIT = """() => new Promise((resolve) => {
    const receipt = document.getElementById('receipt');
    const start = performance.now();
    new MutationObserver((_, observer) => {
      if (receipt.dataset.status === 'accepted') {
        observer.disconnect();
        resolve(performance.now() - start);
      }
    }).observe(receipt, { attributes: true });
    document.querySelector('button[type=submit]').click();
})"""


def submit_times(browser: Any, url: str, samples: int) -> list[float]:
    """Milliseconds from the submit click to an accepted receipt, one fresh profile each."""
    times = []
    for _ in range(samples):
        context = browser.new_context()
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector("button[type=submit]:enabled")
        fill(page)
        times.append(page.evaluate(SUBMIT))
        context.close()
    return times


def main() -> None:
    """Measure both pages and print the figures beside their targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=25)
    parser.add_argument("--weight-only", action="store_true", help="measure the weight alone")
    parser.add_argument("--files", action="store_true", help="list each file's weight")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        static_port = free_port()
        static_origin = f"http://127.0.0.1:{static_port}"
        proc, url, token = start_aggregator(Path(tmp) / "data", static_origin)
        try:
            headers = {"Authorization": f"Bearer {token}"}
            response = requests.post(f"{url}/api/v1/surveys", json=DOC, headers=headers, timeout=10)
            response.raise_for_status()
            export = Path(tmp) / "export"
            subprocess.run(
                [str(BIN / "deniable"), "page", "export", f"{url}/s/{DOC['id']}", str(export)],
                check=True,
                capture_output=True,
            )
            server = static_server(export, static_port)
            pages = {"/s/<id>": f"{url}/s/{DOC['id']}", "export": f"{static_origin}/index.html"}
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
                )
                print(
                    f"# {args.samples} samples each; targets: weight <= "
                    f"{COMPRESSED_TARGET // 1000} KB as the aggregator sends it and < "
                    f"{WEIGHT_TARGET // 1000} KB uncompressed (an export: as its host sends it), median submit -> receipt <= {SPEED_TARGET_MS:.0f} ms"
                )
                print(
                    f"{'page':>8} {'sent B':>8} {'uncompr. B':>10} {'median ms':>10} "
                    f"{'p90 ms':>7}  targets"
                )
                for name, address in pages.items():
                    weight = page_weight(browser, address)
                    if args.files:
                        for file, (sent, size) in weight.files.items():
                            print(f"#   {sent:>8,} {size:>10,}  {file}")
                    median = p90 = math.nan
                    if not args.weight_only:
                        times = sorted(submit_times(browser, address, args.samples))
                        median = statistics.median(times)
                        p90 = times[int(0.9 * (len(times) - 1))]
                    met = weight.met(name == "/s/<id>") and (
                        args.weight_only or median <= SPEED_TARGET_MS
                    )
                    print(
                        f"{name:>8} {weight.sent:>8,} {weight.uncompressed:>10,} {median:>10.1f} "
                        f"{p90:>7.1f}  {'met' if met else 'MISSED'}"
                    )
                browser.close()
            server.shutdown()
            reports = requests.get(
                f"{url}/api/v1/surveys/{DOC['id']}/results", headers=headers, timeout=10
            ).json()["n"]
            if not args.weight_only:
                print(f"# reports the aggregator stored: {reports} of {2 * args.samples}")
        finally:
            proc.terminate()
            proc.wait(10)


if __name__ == "__main__":
    main()
