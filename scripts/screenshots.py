#!/usr/bin/env python3
"""Screenshots of the dashboard and the respondent page for the docs, made with Playwright and
Debian's Chromium.

Starts a throwaway aggregator (its own data directory and port), fills a survey with simulated
respondents (an option nobody chose, whose unbiased estimate falls below 0; long option labels;
a plain age to break down in bands), and writes PNGs to docs/screenshots/ (or --out):

    .venv/bin/python scripts/screenshots.py [--out DIR] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]

SURVEY = {
    "id": "health-2026",
    "title": "Health habits 2026",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "cannabis",
            "text": "Cannabis in the last 6 months?",
            "type": "binary",
            "mechanism": "coins",
            "coins": {"truth": 0.5, "yes": 0.5},
        },
        {
            "id": "party",
            "text": "Which party would you vote for?",
            "type": "categorical",
            "options": ["A", "B", "C", "D"],
            "epsilon": 2.0,
        },
        {
            "id": "browser",
            "text": "Which web browser do you use most?",
            "type": "categorical",
            "options": [
                "Google Chrome",
                "Mozilla Firefox",
                "Internet Explorer (retired, still installed)",
                "Safari",
            ],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {
            "id": "age",
            "text": "How old are you?",
            "type": "integer",
            "min": 18,
            "max": 90,
            "mechanism": "none",
        },
    ],
}
TRUTH = {
    "smokes": {"yes": 0.22},
    "cannabis": {"yes": 0.12},
    "party": {"A": 0.1, "B": 0.45, "C": 0.3},
    "browser": {"Google Chrome": 0.6, "Mozilla Firefox": 0.25, "Safari": 0.15},
}


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(env: dict[str, str], *args: str) -> str:
    """Run deniable-aggregator and return its stdout."""
    done = subprocess.run(
        [str(BIN / "deniable-aggregator"), *args],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def wait_for(url: str) -> None:
    """Block until the server answers /healthz (at most 20 s)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the aggregator at {url} did not start")


def shoot(url: str, token: str, out: Path, chromium: str) -> list[Path]:
    """Log in and photograph the main pages, desktop and phone."""
    out.mkdir(parents=True, exist_ok=True)
    shots = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        for name, viewport in (
            ("desktop", {"width": 1200, "height": 900}),
            ("phone", {"width": 390, "height": 844}),
        ):
            page = browser.new_page(viewport=viewport, device_scale_factor=1)
            page.goto(f"{url}/login")
            if name == "desktop":
                page.screenshot(path=out / "login.png")
                shots.append(out / "login.png")
            page.fill("#token", token)
            page.click("button[type=submit]")
            page.wait_for_url(f"{url}/")
            if name == "desktop":
                page.screenshot(path=out / "surveys.png", full_page=True)
                shots.append(out / "surveys.png")
            page.goto(f"{url}/surveys/{SURVEY['id']}")
            target = out / f"survey-{name}.png"
            page.screenshot(path=target, full_page=True)
            shots.append(target)
            if name == "desktop":
                page.goto(
                    f"{url}/surveys/{SURVEY['id']}/analysis?question=smokes&by=age&cuts=30,50"
                )
                page.locator("#breakdown-result").screenshot(path=out / "breakdown.png")
                shots.append(out / "breakdown.png")
            else:  # the respondent's page, as a phone shows it, one question's details open
                page.goto(f"{url}/s/{SURVEY['id']}")
                page.wait_for_selector("button[type=submit]:enabled")
                page.locator("#q-smokes details summary").click()
                page.screenshot(path=out / "respond-phone.png", full_page=True)
                shots.append(out / "respond-phone.png")
            if name == "desktop":
                page.goto(f"{url}/surveys/new?epsilon=1&margin=0.05&options=2&confidence=0.95")
                page.fill("#document", '{"id": "x", "questions": []}')
                page.click("form[enctype] button[type=submit]")
                page.wait_for_selector("#document-error")
                page.screenshot(path=out / "new-survey.png", full_page=True)
                shots.append(out / "new-survey.png")
            page.close()
        browser.close()
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--respondents", type=int, default=3000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DENIABLE_DATA_DIR": str(Path(tmp) / "data")}
        token = cli(env, "create-token", "--name", "screenshots")
        survey_file = Path(tmp) / "survey.json"
        survey_file.write_text(json.dumps(SURVEY))
        cli(env, "create-survey", str(survey_file))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [str(BIN / "deniable-aggregator"), "run", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(url)
            cli(
                env,
                "simulate",
                SURVEY["id"],
                "--respondents",
                str(args.respondents),
                "--url",
                url,
                "--truth",
                json.dumps(TRUTH),
                "--seed",
                "7",
            )
            for path in shoot(url, token, args.out, args.chromium):
                print(path)
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
