"""deniable-relay as a real process: what it forwards (the sealed bytes, their content type and
the batch tag, nothing of the client's), in batches of --batch or after --max-delay, in a
uniformly random order; its queue limit (503 with Retry-After, nothing lost); its refusals;
CORS for pages on other origins."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.relay_support import Recorded, RelayProcess, recording_gateway, wait_until_full

#: What the relay may send beside the body: HTTP's framing, the content type, the batch tag.
ALLOWED = {"host", "content-type", "content-length", "deniable-batch"}


@pytest.fixture
def gateway() -> Iterator[tuple[str, Recorded]]:
    server, seen = recording_gateway()
    yield f"http://127.0.0.1:{server.server_address[1]}/ohttp", seen
    server.shutdown()
    server.server_close()


def post(url: str, body: bytes, **headers: str) -> requests.Response:
    return requests.post(
        url, data=body, headers={"Content-Type": "message/ohttp-req", **headers}, timeout=30
    )


def in_parallel(url: str, bodies: list[bytes], gap: float = 0.0, **headers: str) -> list[Any]:
    """POST each body from its own thread (`gap` seconds apart); the responses in order."""
    out: list[Any] = [None] * len(bodies)

    def one(i: int) -> None:
        out[i] = post(url, bodies[i], **headers)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
        time.sleep(gap)
    for thread in threads:
        thread.join(60)
    return out


def test_forwards_only_the_sealed_bytes_its_type_and_the_batch_tag(gateway: Any) -> None:
    url, seen = gateway
    relay = RelayProcess(url, batch=3, max_delay=30)
    try:
        bodies = [f"sealed-{i}".encode() for i in range(3)]
        answers = in_parallel(
            relay.url,
            bodies,
            Cookie="session=secret",
            **{
                "User-Agent": "tell-tale/1.0",
                "X-Forwarded-For": "203.0.113.9",
                "Origin": "https://x.example",
            },
        )
    finally:
        relay.stop()
    # Each sender gets the gateway's answer to its own request (the recorder echoes it).
    assert [a.content for a in answers] == bodies
    assert all(
        a.status_code == 200 and a.headers["Content-Type"] == "message/ohttp-res" for a in answers
    )
    assert len(seen.requests) == 3
    tags = set()
    for path, headers, _ in seen.requests:
        assert path == "/ohttp"
        assert {name.lower() for name in headers} <= ALLOWED, headers
        assert headers["Content-Type"] == "message/ohttp-req"
        tags.add(headers["Deniable-Batch"])
    (tag,) = tags  # one batch, one tag
    assert len(tag) == 32 and int(tag, 16) >= 0
    forwarded = " ".join(str(h) for _, h, _ in seen.requests)
    for leak in ("secret", "tell-tale", "203.0.113.9", "x.example", "127.0.0.1:"):
        assert leak not in forwarded.replace(url.split("/")[2], "")


def test_batches_leave_full_or_after_the_delay_each_with_its_own_tag(gateway: Any) -> None:
    url, seen = gateway
    relay = RelayProcess(url, batch=2, max_delay=1.0)
    try:
        started = time.monotonic()
        in_parallel(relay.url, [b"a", b"b", b"c"])
        waited = time.monotonic() - started
    finally:
        relay.stop()
    by_tag = Counter(headers["Deniable-Batch"] for _, headers, _ in seen.requests)
    assert sorted(by_tag.values()) == [1, 2]  # one full batch, one left by the delay
    assert 0.9 <= waited < 10


def test_the_order_is_uniformly_shuffled(gateway: Any) -> None:
    """100 batches of 3 sent in a known order: each of the 6 orders appears (Binomial(100, 1/6):
    0 or 1 times, or more than 40, has probability under 2e-6 together)."""
    url, seen = gateway
    relay = RelayProcess(url, batch=3, max_delay=30)
    try:
        for round_ in range(100):
            in_parallel(relay.url, [f"{round_}-{i}".encode() for i in range(3)], gap=0.005)
    finally:
        relay.stop()
    orders: Counter[tuple[int, ...]] = Counter()
    for _, group in itertools.groupby(seen.requests, key=lambda r: r[1]["Deniable-Batch"]):
        bodies = [body.decode() for _, _, body in group]
        assert len(bodies) == 3 and len({b.split("-")[0] for b in bodies}) == 1
        orders[tuple(int(b.split("-")[1]) for b in bodies)] += 1
    assert sum(orders.values()) == 100
    assert len(orders) == 6 and all(2 <= count <= 40 for count in orders.values()), orders


def test_a_full_queue_answers_503_with_retry_after_and_loses_nothing() -> None:
    """A gateway that holds what it gets: one batch of 2 is being sent, 2 more wait; the queue
    (4) is full."""
    gate = threading.Event()
    server, seen = recording_gateway(gate=gate)
    relay = RelayProcess(
        f"http://127.0.0.1:{server.server_address[1]}/ohttp", batch=2, max_delay=30, queue_limit=4
    )
    try:
        held = in_parallel_background(relay.url, [f"held-{i}".encode() for i in range(4)])
        wait_until_full(relay.url)  # all four in: two at the gateway, two waiting their turn
        refused = post(relay.url, b"one-more")
        assert refused.status_code == 503
        assert int(refused.headers["Retry-After"]) >= 1
        assert refused.headers["Content-Type"].startswith("text/plain")  # the client keeps it
        gate.set()
        answers = held()
        again = in_parallel(relay.url, [b"one-more", b"and-its-pair"])  # sent again when told
        assert [a.status_code for a in answers + again] == [200] * 6
    finally:
        gate.set()
        relay.stop()
        server.shutdown()
        server.server_close()
    assert sorted(body for _, _, body in seen.requests) == sorted(
        [f"held-{i}".encode() for i in range(4)] + [b"one-more", b"and-its-pair"]
    )


def in_parallel_background(url: str, bodies: list[bytes]) -> Any:
    """Start POSTing each body from its own thread; a function that waits for the answers."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.extend(in_parallel(url, bodies, gap=0.05)))
    thread.start()

    def wait() -> list[Any]:
        thread.join(60)
        return out

    return wait


def wait_for_requests(seen: Recorded, count: int, seconds: float = 30) -> None:
    """Wait until the gateway has received `count` requests."""
    deadline = time.monotonic() + seconds
    while True:
        with seen.lock:
            if len(seen.requests) >= count:
                return
        assert time.monotonic() < deadline, f"the gateway got fewer than {count} requests"
        time.sleep(0.02)


def test_stopping_sends_what_is_held() -> None:
    """SIGTERM while a request is held (its batch not full, its delay far off): the relay sends
    it and answers its sender before it exits. That it is held, not still on its way, is
    known: with a batch of 2 at the gateway it fills the queue (3)."""
    gate = threading.Event()
    server, seen = recording_gateway(gate=gate)
    url = f"http://127.0.0.1:{server.server_address[1]}/ohttp"
    relay = RelayProcess(url, batch=2, max_delay=120, queue_limit=3)
    try:
        first = in_parallel_background(relay.url, [b"a", b"b"])
        wait_for_requests(seen, 2)  # a and b are the batch at the gateway
        last = in_parallel_background(relay.url, [b"last"])
        wait_until_full(relay.url)  # "last" is in the queue, alone in its batch
        gate.set()
        assert [a.status_code for a in first()] == [200, 200]
        relay.stop()  # SIGTERM: the held request is sent and answered before the relay exits
        answers = last()
    finally:
        gate.set()
        relay.stop()
        server.shutdown()
        server.server_close()
    bodies = [body for _, _, body in seen.requests]
    assert sorted(bodies[:2]) == [b"a", b"b"] and bodies[2:] == [b"last"]
    assert len(answers) == 1 and answers[0].status_code == 200 and answers[0].content == b"last"


def test_refusals_are_plain_text_and_cors_lets_pages_post(gateway: Any) -> None:
    url, _ = gateway
    relay = RelayProcess(url, batch=1, max_delay=1)
    try:
        wrong = requests.post(
            relay.url, data=b"x", headers={"Content-Type": "application/json"}, timeout=10
        )
        assert wrong.status_code == 415 and wrong.headers["Content-Type"].startswith("text/plain")
        large = post(relay.url, b"x" * (64 * 1024 + 1))
        assert large.status_code == 413
        preflight = requests.options(
            relay.url,
            headers={
                "Origin": "https://page.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type",
            },
            timeout=10,
        )
        assert preflight.status_code == 204
        assert preflight.headers["Access-Control-Allow-Origin"] == "*"
        assert "Content-Type" in preflight.headers["Access-Control-Allow-Headers"]
        answer = post(relay.url, b"x", Origin="https://page.example")
        assert answer.headers["Access-Control-Allow-Origin"] == "*"
        assert "Retry-After" in answer.headers["Access-Control-Expose-Headers"]
    finally:
        relay.stop()


def test_bad_arguments_exit_in_one_line() -> None:
    import subprocess

    from tests.relay_support import RELAY

    for args, code in (
        (["--gateway", "ftp://x", "--batch", "2"], 2),
        (["--gateway", "http://127.0.0.1:9/ohttp", "--batch", "0"], 2),
        (["--gateway", "http://127.0.0.1:9/ohttp", "--batch", "5", "--queue-limit", "2"], 2),
    ):
        done = subprocess.run([str(RELAY), *args], capture_output=True, text=True, timeout=30)
        assert done.returncode == code, done.stderr
        assert "Traceback" not in done.stderr and done.stderr.strip()
