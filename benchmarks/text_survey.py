"""A survey of ordinary size with text questions, at the default limits: a cms and an hcms
question (k 64, m 1024) and a rappor one (k 64, h 2, m 8), 45 candidates each (docs/statistics.md,
"What decoding costs"), answered by many simulated respondents.

    python benchmarks/text_survey.py [--reports 100000] [--seed 1]

It writes that many signed reports (each respondent's words drawn from Zipf shares over the
candidates and ten words that are not candidates, randomized by the survey's own mechanisms) to
a reports.jsonl, then measures, each in a process of its own whose peak resident memory
(VmHWM) it prints beside a process that only imports the aggregator (the baseline):

- offline: `analyze` on the reports.jsonl, streamed line by line, signatures verified;
- the service: the reports ingested into a SQLite store, `deniable-aggregator run` on it, and
  the results over HTTP, then again with 50 more candidates (`?candidates=`).

Target: under 200 MB each. The estimates of both paths are compared (they must agree).
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
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TARGET_BYTES = 200 * 2**20
CANDIDATES = 45
#: Words respondents give that are not candidates (their answers spread over the sketch).
OTHERS = 10
EXTRA = [f"asked {i}" for i in range(50)]


def words(prefix: str, count: int) -> list[str]:
    return [f"{prefix} {i}" for i in range(count)]


def design_survey() -> dict[str, Any]:
    """The survey: three text questions of 45 candidates each."""
    return {
        "id": "text-survey",
        "title": "Cities, apps and drugs",
        "questions": [
            {
                "id": "city",
                "text": "Where were you born?",
                "type": "text",
                "mechanism": "cms",
                "epsilon": 4,
                "cms": {"k": 64, "m": 1024},
                "candidates": words("city", CANDIDATES),
            },
            {
                "id": "app",
                "text": "Which app do you use most?",
                "type": "text",
                "mechanism": "hcms",
                "epsilon": 4,
                "hcms": {"k": 64, "m": 1024},
                "candidates": words("app", CANDIDATES),
            },
            {
                "id": "drug",
                "text": "Which drug did you last use?",
                "type": "text",
                "mechanism": "rappor",
                "rappor": {"k": 64, "h": 2, "m": 8, "f": "1/2", "p": "1/2", "q": "3/4"},
                "candidates": words("drug", CANDIDATES),
            },
        ],
    }


def write_reports(path: Path, count: int, seed: int) -> None:
    """`count` signed reports of simulated respondents, one JSON object a line."""
    from deniable.shared import Survey, make_report
    from deniable.shared.signing import generate_key

    survey = Survey.from_dict(design_survey())
    rng = np.random.default_rng(seed)
    vocabulary = {
        qid: [*question.candidates, *(f"other {qid} {i}" for i in range(OTHERS))]
        for qid, question in survey.questions.items()
    }
    shares = 1.0 / np.arange(1, CANDIDATES + OTHERS + 1) ** 1.1
    shares /= shares.sum()
    picks = {qid: rng.choice(len(v), size=count, p=shares) for qid, v in vocabulary.items()}
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            truth = {qid: vocabulary[qid][picks[qid][i]] for qid in vocabulary}
            out.write(json.dumps(make_report(survey, truth, generate_key())) + "\n")


def peak_of(pid: int | str = "self") -> int:
    """A process's peak resident set size in bytes (VmHWM: unlike ru_maxrss, not inherited
    across exec from a larger parent)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/<pid>/status")


def child(mode: str, path: str) -> None:
    """Run in a process of its own: print {"seconds", "peak", "doc"} as JSON."""
    import deniable.aggregator  # noqa: F401 (the baseline imports what the others do)

    if mode == "baseline":
        print(json.dumps({"seconds": 0.0, "peak": peak_of(), "doc": None}))
        return
    from deniable.aggregator import analyze

    start = time.perf_counter()
    with open(path, encoding="utf-8") as lines:
        doc = analyze(design_survey(), lines).to_dict()
    print(json.dumps({"seconds": time.perf_counter() - start, "peak": peak_of(), "doc": doc}))


def in_child(mode: str, path: Path | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(path or "")],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def aggregator_command() -> str:
    return str(Path(sys.executable).with_name("deniable-aggregator"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def store_reports(data: Path, path: Path) -> float:
    """Create the survey in a SQLite store and ingest the reports, 1,000 a batch; seconds."""
    from deniable.aggregator.access import OPERATOR
    from deniable.aggregator.ingest import ingest
    from deniable.aggregator.store.sqlite import SQLiteStore
    from deniable.aggregator.surveys import create_survey

    start = time.perf_counter()
    store = SQLiteStore.in_data_dir(data)
    store.migrate()
    create_survey(store, design_survey(), who=OPERATOR)  # the default limits
    batch: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            batch.append(json.loads(line))
            if len(batch) == 1000:
                assert {o.result for o in ingest(store, batch)} == {"accepted"}
                batch = []
    if batch:
        assert {o.result for o in ingest(store, batch)} == {"accepted"}
    store.close()
    return time.perf_counter() - start


def through_the_service(data: Path) -> dict[str, Any]:
    """Start `deniable-aggregator run` on the store; GET the results, then with 50 more
    candidates; the server's peak memory at start and after each, and the times."""
    import requests

    env = {**os.environ, "DENIABLE_DATA_DIR": str(data)}
    env.pop("DENIABLE_DATABASE_URL", None)
    token = subprocess.run(
        [aggregator_command(), "create-token", "--name", "bench"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    port = free_port()
    server = subprocess.Popen(
        [aggregator_command(), "run", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the aggregator did not start")
            time.sleep(0.1)
        out: dict[str, Any] = {"at_start": peak_of(server.pid)}
        for name, params in (
            ("results", {}),
            ("with 50 candidates", {"candidates": ",".join(EXTRA)}),
        ):
            start = time.perf_counter()
            answer = requests.get(
                f"{url}/api/v1/surveys/text-survey/results",
                params=params,
                headers=headers,
                timeout=600,
            )
            seconds = time.perf_counter() - start
            if answer.status_code != 200:
                raise SystemExit(f"{name}: HTTP {answer.status_code}: {answer.text[:500]}")
            out[name] = {"seconds": seconds, "peak": peak_of(server.pid), "doc": answer.json()}
        return out
    finally:
        server.terminate()
        server.wait(timeout=30)


def agreement(a: dict[str, Any], b: dict[str, Any]) -> float:
    """The largest difference between two results documents' estimates, candidate by candidate."""
    worst = 0.0
    for qa, qb in zip(a["questions"], b["questions"], strict=True):
        theirs = {row["option"]: row["estimate"] for row in qb["options"]}
        for row in qa["options"]:
            worst = max(worst, abs(row["estimate"] - theirs[row["option"]]))
    return worst


def mib(value: int) -> str:
    return f"{value / 2**20:.0f} MiB"


def run(reports: int, seed: int) -> dict[str, Any]:
    """Every measurement, printed as it is made; the figures as a dict."""
    from deniable.aggregator.stats.estimate import check_decoders
    from deniable.aggregator.stats.limits import DEFAULT_LIMITS
    from deniable.aggregator.stats.sketch_estimate import decoder_cells
    from deniable.shared import Survey

    survey = Survey.from_dict(design_survey())
    check_decoders(survey)  # the default limits
    cells = {qid: decoder_cells(q.randomizer, CANDIDATES) for qid, q in survey.questions.items()}
    print(
        f"survey: 3 text questions x {CANDIDATES} candidates; decoder cells "
        + ", ".join(f"{qid} {c:,}" for qid, c in cells.items())
        + f" (limit {DEFAULT_LIMITS.max_decoder_cells:,} in all)"
    )
    figures: dict[str, Any] = {"reports": reports}
    with tempfile.TemporaryDirectory(prefix="text-survey-") as tmp:
        path = Path(tmp) / "reports.jsonl"
        start = time.perf_counter()
        write_reports(path, reports, seed)
        print(
            f"wrote {reports:,} signed reports ({path.stat().st_size / 2**20:.0f} MiB) in "
            f"{time.perf_counter() - start:.1f} s"
        )
        baseline = in_child("baseline")
        print(f"baseline: a process that imports the aggregator peaks at {mib(baseline['peak'])}")
        offline = in_child("offline", path)
        n = offline["doc"]["n"]
        print(
            f"offline analyze of {n:,} reports: {offline['seconds']:.1f} s, peak "
            f"{mib(offline['peak'])}"
        )
        data = Path(tmp) / "data"
        print(f"ingested into SQLite in {store_reports(data, path):.1f} s")
        service = through_the_service(data)
        print(f"server peak at start: {mib(service['at_start'])}")
        for name in ("results", "with 50 candidates"):
            step = service[name]
            print(f"service {name}: {step['seconds']:.2f} s, server peak {mib(step['peak'])}")
        difference = agreement(offline["doc"], service["results"]["doc"])
        print(f"largest difference between offline and service estimates: {difference:.1e}")
        peaks = [offline["peak"], service["with 50 candidates"]["peak"]]
        verdict = "meets" if max(peaks) < TARGET_BYTES else "misses"
        print(f"peak {mib(max(peaks))}: {verdict} the target of under {mib(TARGET_BYTES)}")
        figures.update(
            baseline=baseline["peak"],
            offline=offline,
            service=service,
            difference=difference,
        )
    return figures


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    print(f"$ python benchmarks/text_survey.py --reports {args.reports} --seed {args.seed}")
    run(args.reports, args.seed)


if __name__ == "__main__":
    main()
