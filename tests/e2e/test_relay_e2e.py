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
import requests

from deniable.client import Client
from deniable.shared import ohttp
from deniable.shared.survey import Survey
from tests.conftest import BIN, free_port
from tests.relay_support import RelayProcess, held_relay, slow_gateway, wait_until_full

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


def answer_receipt(server: Any, home: Path, survey_id: str) -> Any:
    """One respondent's answer to the survey, from their own home: its receipt."""
    with Client(server.url, home) as client:
        return client.answer(survey_id, ANSWERS)


def answer(server: Any, home: Path, survey_id: str) -> str:
    return answer_receipt(server, home, survey_id).status


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_library_sends_through_the_relay_in_one_batch(live_server: Any, tmp_path: Path) -> None:
    relay = RelayProcess(f"{live_server.url}/ohttp", batch=3, max_delay=30)
    try:
        created = live_server.create_survey({**DOC, "relay": relay.url}, fresh=True)
        assert created["survey"]["relay"] == relay.url and created["survey"]["ohttp_keys"]
        sid = created["survey"]["id"]
        with ThreadPoolExecutor(3) as pool:
            statuses = list(
                pool.map(lambda i: answer(live_server, tmp_path / f"c{i}", sid), range(3))
            )
    finally:
        relay.stop()
    assert statuses == ["accepted"] * 3
    results = live_server.results(sid)
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
        sid = live_server.create_survey({**DOC, "relay": relay.url}, fresh=True)["survey"]["id"]

        def run(i: int) -> subprocess.CompletedProcess[str]:
            env = {**os.environ, "DENIABLE_HOME": str(tmp_path / f"cli{i}")}
            return subprocess.run(
                [
                    str(BIN / "deniable"),
                    "answer",
                    live_server.url,
                    sid,
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
    results = live_server.results(sid)
    assert results["n"] == 2 and results["shuffle"]["n"] == 2


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_outbox_waits_for_the_relay_and_sends_through_it(
    live_server: Any, tmp_path: Path
) -> None:
    port = free_port()
    doc = {**DOC, "relay": f"http://127.0.0.1:{port}/"}
    sid = live_server.create_survey(doc, fresh=True)["survey"]["id"]
    with Client(live_server.url, tmp_path / "c") as client:
        receipt = client.answer(sid, ANSWERS)  # the relay is down
        assert receipt.status == "queued" and "127.0.0.1" in (receipt.reason or "")
        assert live_server.results(sid)["n"] == 0
        relay = RelayProcess(f"{live_server.url}/ohttp", batch=1, max_delay=1, port=port)
        try:
            (sent,) = client.sync()
        finally:
            relay.stop()
        assert sent.status == "accepted" and sent.report_id == receipt.report_id
    results = live_server.results(sid)
    assert results["n"] == 1 and results["shuffle"]["n"] == 1


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_relay_at_its_queue_limit_answers_503_and_nothing_is_lost(
    live_server: Any, tmp_path: Path
) -> None:
    """A gateway that holds what it gets until the test lets it go: two respondents' reports
    fill the queue of 2 (a batch being sent, or one sent and one waiting), so a third hears
    503; their client keeps the report and sends it when told."""
    gateway = f"{live_server.url}/ohttp"
    with held_relay(gateway, batch=2, max_delay=1, queue_limit=2) as (relay, gate):
        sid = live_server.create_survey({**DOC, "relay": relay.url}, fresh=True)["survey"]["id"]
        with ThreadPoolExecutor(2) as pool:
            first = [pool.submit(answer, live_server, tmp_path / f"c{i}", sid) for i in range(2)]
            wait_until_full(relay.url)  # both are in the relay, held at the gateway
            with Client(live_server.url, tmp_path / "late") as late:
                refused = late.answer(sid, ANSWERS)
                assert refused.status == "queued" and "503" in (refused.reason or "")
                gate.set()
                assert [f.result(timeout=60) for f in first] == ["accepted"] * 2
                time.sleep(1.2)  # the Retry-After: the relay's delay
                (sent,) = late.sync()
                assert sent.status == "accepted" and sent.report_id == refused.report_id
    assert live_server.results(sid)["n"] == 3  # nothing lost, nothing twice


@pytest.mark.parametrize("backend", ["sqlite"])
def test_an_unlisted_relay_is_one_client_to_the_rate_limit_and_nothing_is_lost(
    live_server_factory: Any, tmp_path: Path
) -> None:
    """DENIABLE_RATE_LIMIT 2 per 4 s and a batch of 3: the relay's address takes two, the
    third respondent's report comes back 429 and waits; sent again after Retry-After, it is
    counted (docs/anonymity.md#rate-limits-and-relays)."""
    server = live_server_factory({"DENIABLE_RATE_LIMIT": "2/4second"})
    relay = RelayProcess(f"{server.url}/ohttp", batch=3, max_delay=2)
    try:
        server.create_survey({**DOC, "relay": relay.url})
        with ThreadPoolExecutor(3) as pool:
            receipts = list(
                pool.map(lambda i: answer_receipt(server, tmp_path / f"c{i}", "anon"), range(3))
            )
        assert sorted(r.status for r in receipts) == ["accepted", "accepted", "queued"]
        (late,) = [i for i, r in enumerate(receipts) if r.status == "queued"]
        assert "429" in (receipts[late].reason or ""), receipts[late].reason
        assert server.results("anon")["n"] == 2
        time.sleep(4.5)  # the window's Retry-After
        with Client(server.url, tmp_path / f"c{late}") as client:
            (sent,) = client.sync()
        assert sent.status == "accepted" and sent.report_id == receipts[late].report_id
    finally:
        relay.stop()
    results = server.results("anon")
    assert results["n"] == 3 and results["shuffle"]["n"] >= 1


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_listed_relay_has_its_own_allowance_and_direct_posts_keep_theirs(
    live_server_factory: Any, tmp_path: Path
) -> None:
    """DENIABLE_RATE_LIMIT 1/minute, the relay's address (127.0.0.1) listed with 100/minute:
    a batch of 4 respondents through the relay all pass; the same address posting straight to
    the API is one client, and its second report waits."""
    server = live_server_factory(
        {
            "DENIABLE_RATE_LIMIT": "1/minute",
            "DENIABLE_RELAY_ADDRESSES": "127.0.0.1",
            "DENIABLE_RELAY_RATE_LIMIT": "100/minute",
        }
    )
    relay = RelayProcess(f"{server.url}/ohttp", batch=4, max_delay=30)
    try:
        server.create_survey({**DOC, "relay": relay.url})
        server.create_survey({**DOC, "id": "direct"})
        with ThreadPoolExecutor(4) as pool:
            statuses = [
                r.status
                for r in pool.map(
                    lambda i: answer_receipt(server, tmp_path / f"c{i}", "anon"), range(4)
                )
            ]
        assert statuses == ["accepted"] * 4
        first = answer_receipt(server, tmp_path / "d1", "direct")
        second = answer_receipt(server, tmp_path / "d2", "direct")
    finally:
        relay.stop()
    assert first.status == "accepted"
    assert second.status == "queued" and "429" in (second.reason or ""), second.reason
    results = server.results("anon")
    assert results["n"] == 4 and results["shuffle"]["n"] == 4


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_tampered_ciphertext_is_refused_and_the_report_sent_again_intact(
    live_server: Any, tmp_path: Path
) -> None:
    """Between the relay and the gateway one bit of every sealed request is flipped: the gateway
    cannot open it and refuses it (400, plain text), nothing is counted, and the client keeps
    the report; through an honest relay on the same address it arrives, sealed afresh."""
    port = free_port()
    created = live_server.create_survey({**DOC, "relay": f"http://127.0.0.1:{port}/"}, fresh=True)
    sid = created["survey"]["id"]
    changing = slow_gateway(f"{live_server.url}/ohttp", delay=0.0, tamper=True)
    relay = RelayProcess(
        f"http://127.0.0.1:{changing.server_address[1]}/ohttp", batch=1, max_delay=1, port=port
    )
    try:
        with Client(live_server.url, tmp_path / "c") as client:
            refused = client.answer(sid, ANSWERS)
            assert refused.status == "queued", refused
            assert "HTTP 400" in (refused.reason or ""), refused.reason
            assert live_server.results(sid)["n"] == 0
            relay.stop()
            relay = RelayProcess(f"{live_server.url}/ohttp", batch=1, max_delay=1, port=port)
            # What the gateway said: the request does not open; send it again.
            route = Survey.from_dict(created["survey"]).route
            sealed = bytearray(ohttp.encapsulate_request(route.config, b"anything").encapsulated)
            sealed[-1] ^= 1
            said = requests.post(
                relay.url,
                data=bytes(sealed),
                headers={"Content-Type": ohttp.REQUEST_TYPE},
                timeout=30,
            )
            assert said.status_code == 400 and "does not open" in said.text
            (sent,) = client.sync()
            assert sent.status == "accepted" and sent.report_id == refused.report_id
    finally:
        relay.stop()
        changing.shutdown()
        changing.server_close()
    results = live_server.results(sid)
    assert results["n"] == 1 and results["shuffle"]["n"] == 1
