"""A long schemathesis run against a live aggregator (not part of the test suite).

    .venv/bin/python scripts/fuzz_api.py --examples 200 --seed 1

Starts `deniable-aggregator run` on a free 127.0.0.1 port with a throwaway data directory, a
researcher token, an open and an invite-only survey, one with numbers and select-all questions
and one with text questions, runs `schemathesis run --checks all` (every
phase, positive and negative data, stateful links; the repository's schemathesis.toml), prints
its summary and how many requests it made, stops the server and exits with schemathesis's code.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SURVEY = ROOT / "aggregator" / "examples" / "demo-survey.json"
NUMBERS = ROOT / "aggregator" / "examples" / "demo-numbers.json"
#: A survey with a text question of each mechanism.
WORDS = {
    "id": "words",
    "title": "Words",
    "questions": [
        {"id": "city", "text": "City?", "type": "text", "epsilon": 2.0, "candidates": ["lagos"]},
        {"id": "app", "text": "App?", "type": "text", "mechanism": "cms", "epsilon": 2.0},
        {"id": "drug", "text": "Drug?", "type": "text", "mechanism": "rappor"},
    ],
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--examples", type=int, default=200, help="examples per operation and phase"
    )
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="deniable-fuzz-") as data:
        env = {**os.environ, "DENIABLE_DATA_DIR": data}
        aggregator = str(BIN / "deniable-aggregator")
        run = lambda *a: subprocess.run(  # noqa: E731
            [aggregator, *a], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        token = run("create-token", "--name", "fuzz")
        port = free_port()
        server = subprocess.Popen(
            [aggregator, "run", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    requests.get(f"{url}/healthz", timeout=1)
                    break
                except requests.ConnectionError:
                    time.sleep(0.1)
            doc = json.loads(SURVEY.read_text("utf-8"))
            numbers = json.loads(NUMBERS.read_text("utf-8"))
            headers = {"Authorization": f"Bearer {token}"}
            for survey in (
                doc,
                {**doc, "id": "invite-only", "enrollment": "invite"},
                numbers,
                WORDS,
            ):
                requests.post(f"{url}/api/v1/surveys", json=survey, headers=headers, timeout=10)
            started = time.monotonic()
            result = subprocess.run(
                [
                    str(BIN / "schemathesis"),
                    "run",
                    f"{url}/api/v1/openapi.json",
                    "--checks",
                    "all",
                    "--mode",
                    "all",
                    "--phases",
                    "examples,coverage,fuzzing,stateful",
                    "--max-examples",
                    str(args.examples),
                    "--seed",
                    str(args.seed),
                    "--workers",
                    "1",
                    "--no-color",
                    "--header",
                    f"Authorization: Bearer {token}",
                    "--report",
                    "har",
                    "--report-dir",
                    data,
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            elapsed = time.monotonic() - started
        finally:
            server.terminate()
            server.wait(timeout=10)
        out = result.stdout
        start = out.find("= FAILURES =") if "= FAILURES =" in out else out.find("= SUMMARY =")
        print(out[out.rfind("\n", 0, max(start, 0)) + 1 :] if start >= 0 else out)
        har = next(Path(data).glob("har-*.json"), None)
        requests_made = len(json.loads(har.read_text("utf-8"))["log"]["entries"]) if har else None
        cases = re.search(r"(\d+) generated", result.stdout)
        print(
            f"requests made: {requests_made}; test cases generated: {cases[1] if cases else '?'}; "
            f"{elapsed:.0f} s; schemathesis exit code {result.returncode}"
        )
        return result.returncode


if __name__ == "__main__":
    sys.exit(main())
