"""Client -> deniable-relay -> gateway -> report counted, over real processes: the library and
the `deniable` command send every report of a relay survey through the relay (none straight to
the aggregator), the outbox keeps a report while the relay is down and sends it through the
relay later, and a relay at its queue limit (503) loses nothing. The page in Chromium is in
tests/browser/test_relay_page.py."""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from deniable.client import Client
from tests.conftest import BIN, free_port
from tests.relay_support import RelayProcess, slow_gateway

DOC = {
    "id": "anon",
    "title": "Through a relay",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 2.0},
        {
            "id": "party",
            "text": "Party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "epsilon": 2.0,
        },
    ],
}
ANSWERS = {"smokes": "yes", "party": "B"}


def answer(server: Any, home: Path) -> str:
    with Client(server.url, home) as client:
        return client.answer("anon", ANSWERS).status


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_library_sends_through_the_relay_in_one_batch(live_server: Any, tmp_path: Path) -> None:
    relay = RelayProcess(f"{live_server.url}/ohttp", batch=3, max_delay=30)
    try:
        created = live_server.create_survey({**DOC, "relay": relay.url})
        assert created["survey"]["relay"] == relay.url and created["survey"]["ohttp_keys"]
        with ThreadPoolExecutor(3) as pool:
            statuses = list(pool.map(lambda i: answer(live_server, tmp_path / f"c{i}"), range(3)))
    finally:
        relay.stop()
    assert statuses == ["accepted"] * 3
    results = live_server.results("anon")
    assert results["n"] == 3
    # All three came in one batch of three: none went straight to the aggregator.
    assert results["shuffle"]["n"] == 3
    for entry in results["questions"]:
        assert (
            entry["shuffle"]["n"] == 3
            and entry["shuffle"]["epsilon"] <= entry["shuffle"]["epsilon_0"]
        )


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_command_line_sends_through_the_relay(live_server: Any, tmp_path: Path) -> None:
    relay = RelayProcess(f"{live_server.url}/ohttp", batch=2, max_delay=30)
    try:
        live_server.create_survey({**DOC, "relay": relay.url})

        def run(i: int) -> subprocess.CompletedProcess[str]:
            env = {**os.environ, "DENIABLE_HOME": str(tmp_path / f"cli{i}")}
            return subprocess.run(
                [
                    str(BIN / "deniable"),
                    "answer",
                    live_server.url,
                    "anon",
                    "--answer",
                    "smokes=no",
                    "--answer",
                    "party=A",
                    "--yes",
                ],  # fmt: skip
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )

        with ThreadPoolExecutor(2) as pool:
            done = list(pool.map(run, range(2)))
    finally:
        relay.stop()
    for result in done:
        assert result.returncode == 0, result.stderr
        assert "accepted" in result.stdout
    results = live_server.results("anon")
    assert results["n"] == 2 and results["shuffle"]["n"] == 2


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_outbox_waits_for_the_relay_and_sends_through_it(
    live_server: Any, tmp_path: Path
) -> None:
    port = free_port()
    live_server.create_survey({**DOC, "relay": f"http://127.0.0.1:{port}/"})
    with Client(live_server.url, tmp_path / "c") as client:
        receipt = client.answer("anon", ANSWERS)  # the relay is down
        assert receipt.status == "queued" and "127.0.0.1" in (receipt.reason or "")
        assert live_server.results("anon")["n"] == 0
        relay = RelayProcess(f"{live_server.url}/ohttp", batch=1, max_delay=1, port=port)
        try:
            (sent,) = client.sync()
        finally:
            relay.stop()
        assert sent.status == "accepted" and sent.report_id == receipt.report_id
    results = live_server.results("anon")
    assert results["n"] == 1 and results["shuffle"]["n"] == 1


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_relay_at_its_queue_limit_answers_503_and_nothing_is_lost(
    live_server: Any, tmp_path: Path
) -> None:
    """A slow gateway (1 s a request): a batch of 2 is being sent, so the queue of 2 is full
    and a third respondent hears 503; their client keeps the report and sends it when told."""
    slow = slow_gateway(f"{live_server.url}/ohttp", delay=1.0)
    relay = RelayProcess(
        f"http://127.0.0.1:{slow.server_address[1]}/ohttp", batch=2, max_delay=1, queue_limit=2
    )
    try:
        live_server.create_survey({**DOC, "relay": relay.url})
        with ThreadPoolExecutor(2) as pool:
            first = [pool.submit(answer, live_server, tmp_path / f"c{i}") for i in range(2)]
            time.sleep(0.5)  # both are in the relay, being sent one after the other
            with Client(live_server.url, tmp_path / "late") as late:
                refused = late.answer("anon", ANSWERS)
                assert refused.status == "queued" and "503" in (refused.reason or "")
                assert [f.result(timeout=60) for f in first] == ["accepted"] * 2
                time.sleep(1.2)  # the Retry-After: the relay's delay
                (sent,) = late.sync()
                assert sent.status == "accepted" and sent.report_id == refused.report_id
    finally:
        relay.stop()
        slow.shutdown()
        slow.server_close()
    assert live_server.results("anon")["n"] == 3  # nothing lost, nothing twice
