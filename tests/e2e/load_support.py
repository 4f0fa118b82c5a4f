"""Load for the concurrency and crash tests: signed reports made up front, posted by processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import requests

from deniable.aggregator.stats.analyze import tally
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key

ROOT = Path(__file__).resolve().parents[2]
POSTER = Path(__file__).with_name("poster.py")
BIN = Path(sys.executable).parent

SURVEY: dict[str, Any] = {
    "id": "load",
    "title": "Under load",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Which party?",
            "type": "categorical",
            "options": ["A", "B", "C", "D", "E"],
            "mechanism": "oue",
            "epsilon": 2.0,
        },
    ],
}
TRUTH = {"smokes": "yes", "party": "C"}


def reports(survey: Survey, count: int) -> list[dict[str, Any]]:
    """`count` real signed reports, each from a fresh key."""
    return [make_report(survey, TRUTH, generate_key()) for _ in range(count)]


def pairs(survey: Survey, count: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """`count` pairs of reports, both of a pair signed by the same key (new report_id)."""
    found = []
    for _ in range(count):
        key = generate_key()
        found.append((make_report(survey, TRUTH, key), make_report(survey, TRUTH, key)))
    return found


def start_posters(url: str, plans: list[list[Any]], workdir: Path) -> list[subprocess.Popen[str]]:
    """One poster process per plan (a list of steps: a report, or a list of reports as a batch)."""
    processes = []
    for i, plan in enumerate(plans):
        path = workdir / f"plan-{i}.json"
        path.write_text(json.dumps(plan))
        processes.append(
            subprocess.Popen(
                [sys.executable, str(POSTER), url, str(path)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
        )
    return processes


def collect(processes: list[subprocess.Popen[str]], timeout: float = 60) -> list[list[Any]]:
    """Each poster's answers: [report_id, result] pairs, in the order sent."""
    found = []
    for process in processes:
        out, err = process.communicate(timeout=timeout)
        assert process.returncode == 0, err
        found.append(json.loads(out))
    return found


def export(url: str, token: str, survey_id: str) -> str:
    """The survey's reports.jsonl."""
    response = requests.get(
        f"{url}/api/v1/surveys/{survey_id}/reports.jsonl",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.text


def served_results(url: str, token: str, survey_id: str) -> dict[str, Any]:
    """The survey's results JSON."""
    response = requests.get(
        f"{url}/api/v1/surveys/{survey_id}/results",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.json()


def assert_tallies_match_export(url: str, token: str, survey: Survey) -> tuple[int, set[str]]:
    """n and every support count served equal a recount of the export; (n, stored report ids)."""
    text = export(url, token, survey.id)
    n, support = tally(survey, text)
    doc = served_results(url, token, survey.id)
    assert doc["n"] == n
    for question in doc["questions"]:
        assert [o["support"] for o in question["options"]] == support[question["id"]]
    ids = {json.loads(line)["report_id"] for line in text.splitlines() if line.strip()}
    return n, ids


def wait_healthy(url: str, process: subprocess.Popen[bytes], seconds: float = 30) -> None:
    """Wait until /healthz answers 200 (or fail if the process died)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            if requests.get(f"{url}/healthz", timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"the server did not answer /healthz within {seconds} s")


def gunicorn(
    data_dir: Path, port: int, workers: int = 4, bin_dir: Path = BIN, **env: str
) -> subprocess.Popen[bytes]:
    """gunicorn (bin_dir's: another venv's for an installed wheel) with the deploy config (bind
    and workers overridden) on the data directory (or on the PostgreSQL database env's
    DENIABLE_DATABASE_URL names)."""
    environ = {**os.environ, "DENIABLE_DATA_DIR": str(data_dir)}
    environ.pop("DENIABLE_DATABASE_URL", None)
    environ.update(env)
    args = [str(bin_dir / "gunicorn")]
    config = ROOT / "deploy" / "gunicorn.conf.py"
    if config.exists():
        args += ["-c", str(config)]
    args += ["-w", str(workers), "-b", f"127.0.0.1:{port}", "deniable.aggregator:create_app()"]
    return subprocess.Popen(
        args,
        env=environ,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the test stops master and workers
    )


def stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> str:
    """Stop a server process group with `sig` (then SIGKILL if it lingers); its stderr."""
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
    try:
        _, err = process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        _, err = process.communicate(timeout=15)
    return (err or b"").decode(errors="replace")
