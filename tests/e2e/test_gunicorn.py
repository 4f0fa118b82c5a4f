"""gunicorn with 4 workers on one SQLite file, 4 client processes posting at once, duplicates."""

from __future__ import annotations

import json
import socket
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import requests

from deniable.shared import Survey
from tests.conftest import AGGREGATOR, free_port
from tests.e2e import load_support as load

pytestmark = pytest.mark.slow

OWN = 40  # reports each process alone sends
SHARED = 20  # reports every process sends
PAIRS = 5  # keys per process that sign two reports


def prepare(data_dir: Path, tmp_path: Path, database_url: str | None = None) -> str:
    """A token and the load survey in a fresh data directory (or database), made with the CLI."""
    env = {"DENIABLE_DATA_DIR": str(data_dir), "PATH": str(AGGREGATOR.parent)}
    if database_url:
        env["DENIABLE_DATABASE_URL"] = database_url
    run = lambda *args: subprocess.run(  # noqa: E731
        [str(AGGREGATOR), *args], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    token = run("create-token")
    doc = tmp_path / "survey.json"
    doc.write_text(json.dumps(load.SURVEY))
    assert run("create-survey", str(doc)) == load.SURVEY["id"]
    return token


def plans(survey: Survey) -> tuple[list[list[object]], dict[str, list[str]]]:
    """Each process's steps, and the report ids by kind."""
    own = load.reports(survey, 4 * OWN)
    shared = load.reports(survey, SHARED)
    pairs = load.pairs(survey, 4 * PAIRS)
    steps: list[list[object]] = []
    for i in range(4):
        mine = own[i * OWN : (i + 1) * OWN]
        plan: list[object] = list(mine[:30])
        plan.append(mine[30:] + shared[:10])  # a batch: new reports and others' duplicates
        for j in range(i * PAIRS, (i + 1) * PAIRS):
            plan += [pairs[j][0], pairs[j][1]]  # a second report from the same key
            other = pairs[(j + PAIRS) % len(pairs)]
            plan.append(other[1])  # ... and another process's pair, in the other order
        plan += shared[10:]  # every process sends these at once
        plan += mine[:5]  # resent alone
        plan.append(mine[30:])  # resent as a batch
        steps.append(plan)
    ids = {
        "own": [r["report_id"] for r in own],
        "shared": [r["report_id"] for r in shared],
        "pairs": [f"{a['report_id']} {b['report_id']}" for a, b in pairs],
    }
    return steps, ids


def test_four_workers_four_clients(tmp_path: Path, database_url: str | None) -> None:
    data_dir = tmp_path / "data"
    token = prepare(data_dir, tmp_path, database_url)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"DENIABLE_DATABASE_URL": database_url} if database_url else {}
    server = load.gunicorn(data_dir, port, workers=4, **env)
    try:
        load.wait_healthy(url, server)
        published = requests.get(f"{url}/api/v1/surveys/{load.SURVEY['id']}", timeout=10).json()
        survey = Survey.from_dict(published["survey"])
        steps, ids = plans(survey)
        answers = load.collect(load.start_posters(url, steps, tmp_path), timeout=60)
        results = [pair for process in answers for pair in process]
        assert {result for _, result in results} <= {"accepted", "duplicate", "rejected"}
        accepted = Counter(rid for rid, result in results if result == "accepted")
        assert max(accepted.values()) == 1  # no report accepted twice
        assert all(accepted[rid] == 1 for rid in ids["own"] + ids["shared"])
        for pair in ids["pairs"]:
            first, second = pair.split()
            assert accepted[first] + accepted[second] == 1  # one report per key
        n, stored = load.assert_tallies_match_export(url, token, survey)
        assert n == sum(accepted.values()) == len(stored)
        assert stored == set(accepted)
    finally:
        err = load.stop(server)
    assert "Traceback" not in err, err
    assert "POST /api/v1/reports" not in err  # no access log: it would record addresses


def raw_post(port: int, head: bytes, body: bytes) -> bytes:
    """What gunicorn answers to hand-written request bytes (for what no client would send)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + body)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\n{}\r\n0\r\n\r\n",  # a chunk size that is not hex
        b"2\r\n{}XX0\r\n\r\n",  # a chunk without its CRLF
    ],
)
def test_a_malformed_chunked_body_is_a_400_problem(tmp_path: Path, body: bytes) -> None:
    data_dir = tmp_path / "data"
    prepare(data_dir, tmp_path)
    port = free_port()
    server = load.gunicorn(data_dir, port, workers=1)
    try:
        load.wait_healthy(f"http://127.0.0.1:{port}", server)
        head = (
            b"POST /api/v1/reports HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n"
        )
        answer = raw_post(port, head, body)
        assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
        assert b"application/problem+json" in answer and b"could not be read" in answer
        assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
    finally:
        err = load.stop(server)
    assert "Traceback" not in err, err
