"""Ingestion throughput of the aggregator under gunicorn, beside its ceilings, in one run.

    python benchmarks/ingest.py [--reports 3000] [--batched-reports 48000] [--workers 1,2,4]
        [--clients 4,16] [--rounds 2]

Both servers run with the deployment's settings, deploy/gunicorn.conf.py (gthread workers,
DENIABLE_THREADS threads each), with DENIABLE_WORKERS set to each worker count in turn, on
loopback. The aggregator keeps its default durability (DENIABLE_SQLITE_SYNCHRONOUS=FULL: each
"accepted" answer comes after an fsync'd commit). Load processes post pre-signed reports over
keep-alive connections, at each concurrency of --clients in turn (each process keeps one
request in flight); every rate is the peak over those levels, for each server alike. A server
that answers only after an fsync needs more requests in flight than one that answers at once
to be kept busy, so a single fixed level would measure the load generator's latency, not the
server (at 4 in flight the aggregator idles between its group commits):

- single: one report per POST, accepted reports/s and p50/p99 latency (at the peak level);
- batched: {"reports": [...]} of --batch reports per POST, accepted reports/s, from reports of
  their own (--batched-reports): at about 10,000 reports/s a level needs tens of thousands of
  reports to run for seconds, like the verify ceiling, rather than for the few hundred
  milliseconds in which starting the load processes and the last request weigh;
- bare Flask: the same single-report bodies to a Flask app that only parses the JSON and
  answers 201, under the same gunicorn settings and load (the issue's baseline);
- bare WSGI: the same, from a plain WSGI function without Flask. The aggregator answers
  report POSTs straight from WSGI too (aggregator/web/report_endpoint.py), so this is the
  stricter comparison, printed for it;
- verify: Ed25519 verifications/s of one process alone (one core's worth, "verify/core"), with
  the verifier the aggregator uses (libsodium through PyNaCl; OpenSSL's rate is printed beside
  it for reference: it takes about twice the CPU);
- verify ceiling: verifications/s of one process per core verifying at once: all the signature
  checking this machine can do. (A gthread worker verifies on every core, since the
  signature check releases the GIL, so the ceiling does not depend on the worker count.)
  Verifying is only part of ingesting a report, so batched ingestion approaches it, never
  passes it; here the load generator shares the same cores, which the ceiling ignores.
- verify-only server: the batches to a plain WSGI function that parses the JSON and, for each
  report, builds its signed bytes, decodes its key and signature and verifies it, then answers
  a result per report, with none of the checks and no storage: an upper bound on batched
  ingestion under these gunicorn settings on this machine, for any server that must at least
  verify every signature. How far it stays below the verify ceiling is what HTTP, JSON,
  gunicorn and sharing the cores cost, before any of the aggregator's own work;
- batched CPU efficiency: (accepted reports per CPU-second the server spent) divided by
  (verifications per CPU-second): the share of the server's work that is the signature check
  itself, independent of how cores are shared with the load generator.

Each figure is the best of --rounds runs (the same for every column); the rounds interleave the
servers, so that a slow spell of a shared machine weighs on all of them alike. It prints
single/bare-Flask and batched/verify-ceiling ratios (targets: >= 0.6 and >= 0.7) and the
single-report p99 (target: < 50 ms).
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from deniable.shared import Survey, make_report, signing
from deniable.shared.signing import generate_key

BIN = Path(sys.executable).parent
#: The deployment's gunicorn settings, used for the aggregator and the bare-Flask app alike.
GUNICORN_CONF = Path(__file__).resolve().parent.parent / "deploy" / "gunicorn.conf.py"
SURVEY = {
    "id": "bench",
    "title": "Ingestion benchmark",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "cannabis",
            "text": "Cannabis?",
            "type": "binary",
            "mechanism": "coins",
            "coins": {"truth": 0.5, "yes": 0.5},
        },
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C", "D"],
            "epsilon": 2.0,
        },
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": [f"r{i}" for i in range(16)],
            "epsilon": 1.0,
            "mechanism": "oue",
        },
    ],
}

BARE_APP = textwrap.dedent(
    """
    from flask import Flask, jsonify, request

    def create_app():
        app = Flask(__name__)

        @app.post("/api/v1/reports")
        def reports():
            body = request.get_json()
            if isinstance(body, dict) and "reports" in body:
                return jsonify({"results": [{"report_id": r.get("report_id"), "result": "accepted"}
                                            for r in body["reports"]]})
            return jsonify({"report_id": body.get("report_id"), "result": "accepted"}), 201

        return app
    """
)


BARE_WSGI = textwrap.dedent(
    """
    import json

    def create_app():
        def app(environ, start_response):
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = json.loads(environ["wsgi.input"].read(length) or b"{}")
            answer = json.dumps({"report_id": body.get("report_id"), "result": "accepted"})
            payload = answer.encode()
            headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
            start_response("201 Created", headers)
            return [payload]

        return app
    """
)


VERIFY_ONLY = textwrap.dedent(
    """
    import json

    from deniable.shared import signing
    from deniable.shared.canonical import b64url_decode
    from deniable.shared.report import canonical_report

    def create_app():
        def app(environ, start_response):
            if environ["REQUEST_METHOD"] != "POST":  # the benchmark's readiness check
                start_response("200 OK", [("Content-Length", "0")])
                return [b""]
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = json.loads(environ["wsgi.input"].read(length))
            results = []
            for report in body.get("reports", [body]):
                signed, _ = canonical_report(report)
                key = signing.public_key_bytes(report["public_key"])
                signature = b64url_decode(report["signature"], length=signing.SIGNATURE_BYTES)
                ok = signing.verify_raw(key, signature, signed)
                results.append({"report_id": report["report_id"],
                                "result": "accepted" if ok else "rejected"})
            payload = json.dumps({"results": results}).encode()
            headers = [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
            start_response("200 OK", headers)
            return [payload]

        return app
    """
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: A survey of text questions, one per mechanism at its defaults (hcms 16 x 1024, cms 16 x 256,
#: rappor 32 bits in 16 cohorts), for `--text`.
TEXT_SURVEY = {
    "id": "bench",
    "title": "Ingestion benchmark, text",
    "questions": [
        {"id": "city", "text": "City?", "type": "text", "epsilon": 2.0, "candidates": ["lagos"]},
        {"id": "app", "text": "App?", "type": "text", "mechanism": "cms", "epsilon": 2.0},
        {"id": "drug", "text": "Drug?", "type": "text", "mechanism": "rappor"},
    ],
}
TRUTHS = {
    "binary": {"smokes": "no", "cannabis": "yes", "party": "B", "region": "r3"},
    "text": {"city": "Lagos", "app": "mail", "drug": "cannabis"},
}


def _sign_chunk(args: tuple[int, int, str]) -> list[bytes]:
    count, seed, kind = args
    survey = Survey.from_dict(TEXT_SURVEY if kind == "text" else SURVEY)
    truth = TRUTHS[kind]
    return [json.dumps(make_report(survey, truth, generate_key())).encode() for _ in range(count)]


def make_bodies(count: int, kind: str = "binary") -> list[bytes]:
    """`count` reports, each signed by its own fresh key, serialized once."""
    chunks = [(count // 8 + (i < count % 8), i, kind) for i in range(8)]
    with mp.get_context("fork").Pool(2) as pool:
        return [body for chunk in pool.map(_sign_chunk, chunks) for body in chunk]


class Server:
    """A gunicorn process on a free loopback port, stopped on exit."""

    def __init__(self, app: str, workers: int, env: dict[str, str], cwd: Path | None = None):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                str(BIN / "gunicorn"),
                "--config",
                str(GUNICORN_CONF),
                "--bind",
                f"127.0.0.1:{self.port}",
                app,
            ],
            env=dict(env, DENIABLE_WORKERS=str(workers)),
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def wait(self, path: str) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", path)
                if conn.getresponse().status < 500:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"server did not start: {self.proc.stderr.read().decode()[-2000:]}")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _post_all(port: int, bodies: Sequence[bytes], queue: Any) -> None:

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json"}
    latencies, accepted = [], 0
    for body in bodies:
        start = time.perf_counter()
        conn.request("POST", "/api/v1/reports", body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        latencies.append(time.perf_counter() - start)
        if response.status == 201:
            accepted += 1
        elif response.status == 200:
            accepted += sum(r["result"] == "accepted" for r in json.loads(data).get("results", []))
    queue.put((accepted, latencies))


def load(port: int, bodies: Sequence[bytes], clients: int) -> dict[str, float]:
    """Post every body from `clients` processes at once; accepted/s and latency percentiles."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    parts = [bodies[i::clients] for i in range(clients)]
    procs = [ctx.Process(target=_post_all, args=(port, part, queue)) for part in parts]
    start = time.perf_counter()
    for proc in procs:
        proc.start()
    found = [queue.get() for _ in procs]
    elapsed = time.perf_counter() - start
    for proc in procs:
        proc.join()
    accepted = sum(a for a, _ in found)
    latencies = sorted(lat for _, lats in found for lat in lats)
    return {
        "accepted": accepted,
        "per_second": accepted / elapsed,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    }


def _verify_loop(seconds: float, queue: Any, verify: Any = signing.verify_raw) -> None:
    key = generate_key()
    public = signing.public_key_bytes(signing.public_key_text(key))
    message = b"x" * 420
    signature = key.sign(message)
    count, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(200):
            verify(public, signature, message)
        count += 200
    queue.put(count / seconds)


def verify_ceiling(processes: int, seconds: float = 2.0, verify: Any = signing.verify_raw) -> float:
    """Ed25519 verifications per second by `processes` processes at once, with the verifier
    the aggregator uses (signing.verify_raw) unless told otherwise."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_verify_loop, args=(seconds, queue, verify)) for _ in range(processes)
    ]
    for proc in procs:
        proc.start()
    rates = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    return sum(rates)


def process_tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by a process and its children (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry) == pid or int(fields[1]) == pid:  # fields[1] is the parent pid
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def fresh_database(url: str) -> str:
    """The URL of a new empty database on the server of `url` (whose user may create one)."""
    from urllib.parse import urlsplit

    import psycopg

    name = f"deniable_bench_{os.getpid()}_{time.monotonic_ns()}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlsplit(url)._replace(path=f"/{name}").geturl()


def split(bodies: Sequence[bytes], parts: int) -> list[Sequence[bytes]]:
    """`bodies` cut into `parts` consecutive slices (each report is sent once)."""
    size = len(bodies) // parts
    return [bodies[i * size : (i + 1) * size] for i in range(parts)]


def peak(runs: dict[int, dict[str, float]]) -> dict[str, float]:
    """The fastest run of a sweep over load levels, with its level as "clients"."""
    clients, found = max(runs.items(), key=lambda item: item[1]["per_second"])
    return dict(found, clients=clients)


def run_aggregator(
    workers: int,
    singles: Sequence[bytes],
    batched_bodies: Sequence[bytes],
    batch: int,
    levels: Sequence[int],
    env: dict,
    survey: dict = SURVEY,
) -> dict:
    data = Path(tempfile.mkdtemp(prefix="deniable-bench-"))
    env = dict(env, DENIABLE_DATA_DIR=str(data))
    if env.get("DENIABLE_DATABASE_URL"):
        env["DENIABLE_DATABASE_URL"] = fresh_database(env["DENIABLE_DATABASE_URL"])
    try:
        (data / "survey.json").write_text(json.dumps(survey))
        subprocess.run(
            [str(BIN / "deniable-aggregator"), "init-db"], env=env, check=True, capture_output=True
        )
        subprocess.run(
            [str(BIN / "deniable-aggregator"), "create-survey", str(data / "survey.json")],
            env=env,
            check=True,
            capture_output=True,
        )
        parts = split(singles, len(levels))
        batched_parts = split(batched_bodies, len(levels))
        server = Server("deniable.aggregator:create_app()", workers, env)
        try:
            server.wait("/healthz")
            single = {c: load(server.port, part, c) for c, part in zip(levels, parts, strict=False)}
            batched = {}
            for clients, part in zip(levels, batched_parts, strict=True):
                batches = make_batches(part, batch)
                cpu_before = process_tree_cpu(server.proc.pid)
                batched[clients] = load(server.port, batches, clients)
                batched[clients]["cpu_seconds"] = process_tree_cpu(server.proc.pid) - cpu_before
        finally:
            server.stop()
        return {
            "single": peak(single),
            "batched": peak(batched),
            "accepted": sum(r["accepted"] for r in [*single.values(), *batched.values()]),
            "sent": sum(len(part) for part in [*parts, *batched_parts]),
        }
    finally:
        shutil.rmtree(data, ignore_errors=True)


def make_batches(bodies: Sequence[bytes], batch: int) -> list[bytes]:
    """The bodies as {"reports": [...]} POST bodies of `batch` reports each."""
    return [
        json.dumps({"reports": [json.loads(b) for b in bodies[i : i + batch]]}).encode()
        for i in range(0, len(bodies), batch)
    ]


def run_bare(
    workers: int,
    bodies: Sequence[bytes],
    levels: Sequence[int],
    env: dict,
    source: str = BARE_APP,
    batch: int | None = None,
) -> dict:
    """The peak rate of a bare app (`source`) over the load levels; with `batch`, the bodies
    are sent as batches of that many reports."""
    folder = Path(tempfile.mkdtemp(prefix="deniable-bare-"))
    try:
        (folder / "bare_app.py").write_text(source)
        server = Server(
            "bare_app:create_app()", workers, dict(env, PYTHONPATH=str(folder)), cwd=folder
        )
        try:
            server.wait("/")
            parts = split(bodies, len(levels))
            if batch is not None:
                parts = [make_batches(part, batch) for part in parts]
            return peak(
                {c: load(server.port, part, c) for c, part in zip(levels, parts, strict=True)}
            )
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--reports",
        type=int,
        default=3000,
        help="single-report POSTs per server run, split over the load levels",
    )
    parser.add_argument(
        "--batched-reports",
        type=int,
        default=48000,
        help="reports sent in batches per aggregator run, split over the load levels",
    )
    parser.add_argument(
        "--workers", default="1,2,4", help="gunicorn worker counts, comma-separated"
    )
    parser.add_argument("--batch", type=int, default=500, help="reports per batched POST")
    parser.add_argument(
        "--clients",
        default="4,16",
        help="load levels: load-generating processes (requests in flight), comma-separated",
    )
    parser.add_argument(
        "--threads", type=int, default=8, help="DENIABLE_THREADS: threads per gunicorn worker"
    )
    parser.add_argument("--rounds", type=int, default=2, help="runs per figure; the best is kept")
    parser.add_argument(
        "--database-url", default=None, help="DENIABLE_DATABASE_URL (default: SQLite)"
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write the figures to this file"
    )
    parser.add_argument(
        "--text",
        action="store_true",
        help="only: text reports (hcms, cms, rappor) beside the binary survey's, at the first "
        "worker count, on SQLite",
    )
    parser.add_argument(
        "--synchronous",
        default=None,
        help="DENIABLE_SQLITE_SYNCHRONOUS for the aggregator (default: the aggregator's own)",
    )
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    env["DENIABLE_THREADS"] = str(args.threads)
    backends = [("sqlite", env)]
    if args.database_url:  # both backends in the same run, for their ratio
        backends.append(("postgres", dict(env, DENIABLE_DATABASE_URL=args.database_url)))
    if args.synchronous:
        env["DENIABLE_SQLITE_SYNCHRONOUS"] = args.synchronous
    command = "python benchmarks/ingest.py " + " ".join(argv if argv is not None else sys.argv[1:])
    print(f"# {command.strip()}")
    print(
        f"# {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"backends: {', '.join(name for name, _ in backends)}"
    )
    if args.text:
        text_beside_binary(args, env)
        return
    rows = []
    cores = os.cpu_count() or 1
    per_core = best(args.rounds, partial(verify_rate, 1))["rate"]
    openssl = verify_ceiling(1, verify=signing._openssl_verify)
    levels = [int(c) for c in args.clients.split(",")]
    # Each run starts on an empty database, so every run may send the same reports.
    bodies, batched_bodies = make_bodies(args.reports), make_bodies(args.batched_reports)
    for workers in [int(w) for w in args.workers.split(",")]:
        # Rounds interleave the servers (bare, WSGI, ceiling, each backend; again), so that a
        # slow or fast spell of this shared machine falls on all of them, not on one.
        bare_runs, wsgi_runs, verify_runs, ceilings = [], [], [], []
        backend_runs: dict[str, list[dict]] = {name: [] for name, _ in backends}
        for _ in range(max(1, args.rounds)):
            bare_runs.append(run_bare(workers, bodies, levels, env))
            wsgi_runs.append(run_bare(workers, bodies, levels, env, BARE_WSGI))
            ceilings.append(verify_ceiling(cores))
            verify_runs.append(
                run_bare(workers, batched_bodies, levels, env, VERIFY_ONLY, batch=args.batch)
            )
            for backend, benv in backends:
                backend_runs[backend].append(
                    run_aggregator(workers, bodies, batched_bodies, args.batch, levels, benv)
                )
        bare = max(bare_runs, key=lambda f: f["per_second"])
        wsgi = max(wsgi_runs, key=lambda f: f["per_second"])
        ceiling = max(ceilings)
        verify_only = max(verify_runs, key=lambda f: f["per_second"])
        for backend, _ in backends:
            runs = backend_runs[backend]
            single = max((r["single"] for r in runs), key=lambda f: f["per_second"])
            batched = max((r["batched"] for r in runs), key=lambda f: f["per_second"])
            row = {
                "backend": backend,
                "workers": workers,
                "single": single["per_second"],
                "single_clients": single["clients"],
                "single_p50_ms": single["p50_ms"],
                "single_p99_ms": single["p99_ms"],
                "batched": batched["per_second"],
                "batched_clients": batched["clients"],
                "bare_flask": bare["per_second"],
                "bare_clients": bare["clients"],
                "bare_wsgi": wsgi["per_second"],
                "verify_per_core": per_core,
                "verify_ceiling": ceiling,
                "verify_only": verify_only["per_second"],
                "verify_processes": cores,
                "accepted": min(r["accepted"] for r in runs),
                "sent": runs[0]["sent"],
            }
            row["single_vs_bare"] = row["single"] / row["bare_flask"]
            row["single_vs_wsgi"] = row["single"] / row["bare_wsgi"]
            row["batched_vs_verify"] = row["batched"] / row["verify_ceiling"]
            row["verify_only_vs_verify"] = row["verify_only"] / row["verify_ceiling"]
            row["batched_vs_verify_only"] = row["batched"] / row["verify_only"]
            row["batched_per_cpu_second"] = batched["accepted"] / max(batched["cpu_seconds"], 1e-9)
            row["batched_cpu_efficiency"] = row["batched_per_cpu_second"] / per_core
            rows.append(row)
    print(
        f"# gunicorn: {GUNICORN_CONF.relative_to(GUNICORN_CONF.parent.parent)}, "
        f"{args.threads} threads per worker, load levels {args.clients} processes "
        f"(@n: the peak's level), best of {args.rounds}"
    )
    print(
        f"# verify/core: {per_core:.0f}/s with {signing.verifier()}, the aggregator's verifier "
        f"(one process alone; OpenSSL's: {openssl:.0f}/s)"
    )
    header = (
        f"{'backend':>8} {'workers':>7} {'single/s':>12} {'p50 ms':>7} {'p99 ms':>7}"
        f" {'bare/s':>11} {'ratio':>6} {'batched/s':>12} {'ceiling/s':>10} {'ratio':>6}"
        f" {'cpu eff':>7} {'v-only/s':>8} {'ratio':>6} {'wsgi/s':>7} {'ratio':>6} {'accepted':>11}"
    )
    print(header)
    for r in rows:
        single = f"{r['single']:.0f} @{r['single_clients']}"
        bare = f"{r['bare_flask']:.0f} @{r['bare_clients']}"
        batched = f"{r['batched']:.0f} @{r['batched_clients']}"
        print(
            f"{r['backend']:>8} {r['workers']:>7} {single:>12} {r['single_p50_ms']:>7.2f}"
            f" {r['single_p99_ms']:>7.2f} {bare:>11} {r['single_vs_bare']:>6.2f}"
            f" {batched:>12} {r['verify_ceiling']:>10.0f} {r['batched_vs_verify']:>6.2f}"
            f" {r['batched_cpu_efficiency']:>7.2f} {r['verify_only']:>8.0f}"
            f" {r['verify_only_vs_verify']:>6.2f} {r['bare_wsgi']:>7.0f} {r['single_vs_wsgi']:>6.2f}"
            f" {r['accepted']:>5}/{r['sent']}"
        )
    print(f"ceiling = Ed25519 verifications/s of {cores} processes at once (one per core)")
    print(
        "cpu eff = batched reports per server CPU-second / verifications per CPU-second "
        "(1.0 would be a server that only verifies)"
    )
    print(
        "v-only/s = batches to a server that only parses and verifies (no checks, no storage); "
        "ratio = v-only/ceiling, the most any server verifying every report reached here"
    )
    print("wsgi/s = the bare app without Flask (a plain WSGI function); ratio = single/wsgi")
    print("targets: single/bare-Flask >= 0.60, batched/ceiling >= 0.70, p99 < 50 ms")
    peak = max(rows, key=lambda r: r["single"])
    print(
        f"single-report peak: {peak['single']:.0f}/s with {peak['workers']} workers, "
        f"ratio {peak['single_vs_bare']:.2f}, p99 {peak['single_p99_ms']:.1f} ms; "
        f"best batched ratio {max(r['batched_vs_verify'] for r in rows):.2f}, "
        f"best batched CPU efficiency {max(r['batched_cpu_efficiency'] for r in rows):.2f}"
    )
    print(
        f"verify-only server: best {max(r['verify_only_vs_verify'] for r in rows):.2f} of the "
        f"ceiling; batched/verify-only "
        + ", ".join(f"{r['batched_vs_verify_only']:.2f}" for r in rows)
    )
    if len(backends) > 1:
        for workers in sorted({r["workers"] for r in rows}):
            lite, pg = (
                next(r for r in rows if r["workers"] == workers and r["backend"] == b)
                for b in ("sqlite", "postgres")
            )
            print(
                f"postgres/sqlite at {workers} workers: single {pg['single'] / lite['single']:.2f}, "
                f"batched {pg['batched'] / lite['batched']:.2f}"
            )
    if args.json:
        args.json.write_text(json.dumps({"command": command, "rows": rows}, indent=2))


def verify_rate(processes: int) -> dict[str, float]:
    """verify_ceiling as a figure for `best`."""
    return {"rate": verify_ceiling(processes)}


def best(rounds: int, measure: Any) -> dict[str, float]:
    """The run with the highest rate of `rounds` runs of `measure`."""
    runs = [measure() for _ in range(max(1, rounds))]
    return max(runs, key=lambda f: f.get("per_second", f.get("rate", 0.0)))


def text_beside_binary(args: argparse.Namespace, env: dict) -> None:
    """Accepted reports/s of a survey of text questions beside the binary survey's, each the
    best of --rounds runs (interleaved), single and batched, on SQLite."""
    workers = int(args.workers.split(",")[0])
    levels = [int(c) for c in args.clients.split(",")]
    figures: dict[str, list[dict]] = {"binary": [], "text": []}
    bodies = {kind: make_bodies(args.reports, kind) for kind in figures}
    batched = {kind: make_bodies(args.batched_reports, kind) for kind in figures}
    sizes = {kind: statistics.mean(len(b) for b in bodies[kind]) for kind in figures}
    for _ in range(max(1, args.rounds)):
        for kind in figures:
            survey = TEXT_SURVEY if kind == "text" else SURVEY
            figures[kind].append(
                run_aggregator(
                    workers, bodies[kind], batched[kind], args.batch, levels, env, survey
                )
            )
    print(f"{'survey':>8} {'bytes':>6} {'single/s':>9} {'p99 ms':>7} {'batched/s':>10}")
    best = {}
    for kind, runs in figures.items():
        single = max((r["single"] for r in runs), key=lambda f: f["per_second"])
        batch = max((r["batched"] for r in runs), key=lambda f: f["per_second"])
        best[kind] = (single["per_second"], batch["per_second"])
        print(
            f"{kind:>8} {sizes[kind]:>6.0f} {single['per_second']:>9.0f} "
            f"{single['p99_ms']:>7.1f} {batch['per_second']:>10.0f}"
        )
    print(
        f"text/binary: single {best['text'][0] / best['binary'][0]:.2f}, "
        f"batched {best['text'][1] / best['binary'][1]:.2f} ({workers} workers)"
    )


if __name__ == "__main__":
    main()
