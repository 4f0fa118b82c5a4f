"""Reports per second through deniable-relay and the OHTTP gateway, beside direct POSTs, and the
latency a batch adds (docs/anonymity.md).

    .venv/bin/python benchmarks/relay.py [--reports 600] [--clients 8] [--batch 50]
        [--max-delay 2]

A real `deniable-aggregator run` (SQLite, default durability: an fsync'd commit before each
"accepted") and a real `deniable-relay` on loopback. The same number of pre-signed reports is
sent three ways, by --clients threads each keeping one request in flight (through the relay,
--relay-clients: respondents are many devices, and a batch fills only when at least --batch
reports are in flight at once; fewer wait --max-delay for each batch):

- direct: each report POSTed to /api/v1/reports;
- gateway: each report sealed (HPKE, done by the client, timed) and POSTed to /ohttp straight,
  its answer opened: the gateway's own cost;
- relay: the same through the relay, in batches of --batch (at most --max-delay s): what a
  respondent's report costs end to end.

Printed: accepted reports/s and median and p95 latency for each, and the latency of one report
alone through the relay (it waits for --max-delay, the price of a batch that does not fill).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deniable.client.delivery import classify  # noqa: E402
from deniable.shared import bhttp, ohttp  # noqa: E402
from deniable.shared.canonical import canonical_json  # noqa: E402
from deniable.shared.report import make_report  # noqa: E402
from deniable.shared.signing import generate_key  # noqa: E402
from deniable.shared.survey import Survey  # noqa: E402
from tests.conftest import LiveServer  # noqa: E402
from tests.relay_support import RelayProcess  # noqa: E402

DOC = {
    "id": "bench-relay",
    "title": "Relay benchmark",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "epsilon": 2.0,
        },
    ],
}
TRUTH = {"smokes": "yes", "party": "B"}


def sealed_post(
    url: str, survey: Survey, report: dict[str, Any], session: requests.Session
) -> bool:
    """Seal one report, POST it to `url` (the gateway or the relay), open the answer."""
    message = bhttp.Request(
        "POST",
        "http",
        "bench",
        "/api/v1/reports",
        (("content-type", "application/json"),),
        canonical_json(report),
    )
    request = ohttp.encapsulate_request(survey.route.config, bhttp.encode_request(message))
    answer = session.post(
        url, data=request.encapsulated, headers={"Content-Type": ohttp.REQUEST_TYPE}, timeout=120
    )
    if answer.status_code != 200:
        return False
    inner = bhttp.decode_response(request.open_response(answer.content))
    return (
        classify(inner.status, dict(inner.headers), inner.content, report["report_id"]).outcome
        == "accepted"
    )


def direct_post(url: str, report: dict[str, Any], session: requests.Session) -> bool:
    answer = session.post(f"{url}/api/v1/reports", json=report, timeout=120)
    return answer.status_code == 201


def run(
    send: Callable[[dict[str, Any], requests.Session], bool],
    reports: list[dict[str, Any]],
    clients: int,
) -> dict[str, float]:
    """Send every report from `clients` threads; rate and latencies."""
    latencies: list[float] = []
    accepted = 0
    lock = threading.Lock()
    queue = list(reversed(reports))

    def worker() -> None:
        nonlocal accepted
        with requests.Session() as session:
            while True:
                with lock:
                    if not queue:
                        return
                    report = queue.pop()
                started = time.perf_counter()
                ok = send(report, session)
                took = time.perf_counter() - started
                with lock:
                    latencies.append(took)
                    accepted += ok

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "rate": accepted / elapsed,
        "accepted": accepted,
        "p50": statistics.median(latencies) * 1000,
        "p95": latencies[int(0.95 * (len(latencies) - 1))] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=600)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--max-delay", type=float, default=2.0)
    parser.add_argument("--relay-clients", type=int, default=None, help="default: 2 x --batch")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = LiveServer(Path(tmp) / "aggregator", {"DENIABLE_RATE_LIMIT": ""})
        server.start()
        relay = RelayProcess(f"{server.url}/ohttp", batch=args.batch, max_delay=args.max_delay)
        try:
            rows = []
            for way in ("direct", "gateway", "relay"):
                doc = {**DOC, "id": f"bench-{way}", "relay": relay.url}
                survey = Survey.from_dict(server.create_survey(doc)["survey"])
                reports = [make_report(survey, TRUTH, generate_key()) for _ in range(args.reports)]
                send: Callable[[dict[str, Any], requests.Session], bool]
                if way == "direct":
                    send = lambda r, s: direct_post(server.url, r, s)  # noqa: E731
                elif way == "gateway":
                    send = lambda r, s, v=survey: sealed_post(f"{server.url}/ohttp", v, r, s)  # noqa: E731
                else:
                    send = lambda r, s, v=survey: sealed_post(relay.url, v, r, s)  # noqa: E731
                clients = (args.relay_clients or 2 * args.batch) if way == "relay" else args.clients
                rows.append((way, run(send, reports, clients)))
                assert server.results(survey.id)["n"] == args.reports, way
            lone_doc = {**DOC, "id": "bench-lone", "relay": relay.url}
            lone = Survey.from_dict(server.create_survey(lone_doc)["survey"])
            with requests.Session() as session:
                started = time.perf_counter()
                assert sealed_post(
                    relay.url, lone, make_report(lone, TRUTH, generate_key()), session
                )
                alone = time.perf_counter() - started
        finally:
            relay.stop()
            server.stop()
    print(f"{args.reports} reports, {args.clients} clients ({args.relay_clients or 2 * args.batch} "
          f"through the relay), relay batches of {args.batch} "
          f"(at most {args.max_delay:g} s), deniable-aggregator run (SQLite, fsync per commit), "
          f"{os.cpu_count()} cores")  # fmt: skip
    print(f"{'path':10} {'reports/s':>10} {'p50 ms':>9} {'p95 ms':>9}")
    for way, found in rows:
        print(f"{way:10} {found['rate']:10.1f} {found['p50']:9.1f} {found['p95']:9.1f}")
    direct = rows[0][1]["rate"]
    print(
        f"gateway/direct: {rows[1][1]['rate'] / direct:.2f}; relay/direct: {rows[2][1]['rate'] / direct:.2f}"
    )
    print(f"one report alone through the relay: {alone * 1000:.0f} ms (it waits --max-delay)")


if __name__ == "__main__":
    main()
