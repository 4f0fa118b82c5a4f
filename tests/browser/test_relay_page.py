"""static/ohttp.js in Chromium: HPKE and OHTTP against the RFCs' vectors (RFC 9180 A.1.1,
RFC 9458 A), then the respondent page sending through a real deniable-relay to a real
aggregator, online and from the offline outbox, never to the aggregator's report endpoint."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import expect
from test_offline_page import answer_offline, first_visit
from test_respondent_page import DOC, fill_and_send
from test_shared_device import SHARED, stored_reports

from tests.relay_support import RelayProcess, held_relay, wait_until_full

VECTORS = json.loads((Path(__file__).parents[1] / "conformance" / "ohttp.json").read_text())


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_browser_module_matches_the_rfc_vectors(live_server: Any, page: Any) -> None:
    page.goto(f"{live_server.url}/s/nothing-here")
    got = page.evaluate(
        """async ({ rfc9180: v, rfc9458: a }) => {
            const m = await import('/static/ohttp.js');
            const h = (text) => Uint8Array.from((text.match(/../g) || []), (b) => parseInt(b, 16));
            const hex = (bytes) => [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
            const ephemeral = await m.x25519Pair(h(v.skEm));
            const ctx = await m.setupBaseS(h(v.pkRm), h(v.info), ephemeral);
            const out = {
              pkEm: hex(ephemeral.publicKey), enc: hex(ctx.enc), shared: hex(ctx.sharedSecret),
              key: hex(ctx.key), nonce: hex(ctx.baseNonce), exporter: hex(ctx.exporterSecret),
              cts: [], exports: [],
            };
            for (const e of v.encryptions) out.cts.push(hex(await m.seal(ctx, h(e.aad), h(e.pt))));
            for (const e of v.exports) {
              out.exports.push(hex(await m.exportSecret(ctx, h(e.exporter_context), e.L)));
            }
            const keys = h(a.key_config);
            const [config] = m.parseKeyConfigs(m.concat(new Uint8Array([0, keys.length]), keys));
            const sealed = await m.encapsulate(config, h(a.request), await m.x25519Pair(h(a.skE)));
            out.encapsulated = hex(sealed.encapsulated);
            out.response = hex(await sealed.open(h(a.encapsulated_response)));
            out.status = m.decodeResponse(h(a.response)).status;
            out.request = hex(m.encodeRequest(a.request_parts));
            out.keyId = config.keyId;
            try {
              const changed = h(a.encapsulated_response);
              changed[changed.length - 1] ^= 1;
              await sealed.open(changed);
              out.tampered = 'opened';
            } catch {
              out.tampered = 'refused';
            }
            return out;
        }""",
        VECTORS,
    )
    v, a = VECTORS["rfc9180"], VECTORS["rfc9458"]
    assert (got["pkEm"], got["enc"], got["shared"]) == (v["pkEm"], v["enc"], v["shared_secret"])
    assert (got["key"], got["nonce"], got["exporter"]) == (
        v["key"],
        v["base_nonce"],
        v["exporter_secret"],
    )
    assert got["cts"] == [e["ct"] for e in v["encryptions"]]
    assert got["exports"] == [e["exported_value"] for e in v["exports"]]
    assert got["keyId"] == a["key_id"]
    assert got["encapsulated"] == a["encapsulated_request"]
    assert got["response"] == a["response"]
    assert got["status"] == a["response_status"]
    # RFC 9292 lets the vector leave its empty sections out; both encoders write them (empty
    # header fields, content and trailers: three zero bytes), as the Python one does.
    assert got["request"] == a["request"] + "000000"
    assert got["tampered"] == "refused"


@pytest.fixture
def relayed(live_server: Any) -> Iterator[tuple[Any, RelayProcess]]:
    """A real aggregator and a real relay in front of its gateway (batches of 2, 1 s at most)."""
    relay = RelayProcess(f"{live_server.url}/ohttp", batch=2, max_delay=1.0)
    yield live_server, relay
    relay.stop()


def posts(page: Any) -> list[str]:
    """The URL of every POST the page (or its worker) makes from now on."""
    seen: list[str] = []
    page.context.on("request", lambda r: seen.append(r.url) if r.method == "POST" else None)
    return seen


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_page_sends_through_the_relay(relayed: tuple[Any, RelayProcess], page: Any) -> None:
    server, relay = relayed
    server.create_survey({**DOC, "relay": relay.url})
    seen = posts(page)
    page.goto(f"{server.url}/s/web-page")
    # In plain words, what the relay protects against and what it does not.
    expect(page.locator("[data-relay]")).to_contain_text(relay.url.rstrip("/"))
    expect(page.locator("[data-relay]")).to_contain_text("cannot read what you send")
    expect(page.locator("[data-relay]")).to_contain_text("do not work together")
    fill_and_send(page)
    expect(page.locator("#receipt-status")).to_contain_text("accepted", timeout=20_000)
    results = server.results("web-page")
    assert results["n"] == 1
    assert (
        results["shuffle"]["n"] == 1
        and results["shuffle"]["epsilon"] <= results["shuffle"]["epsilon_0"]
    )
    assert seen and all(url == relay.url for url in seen), seen  # never the aggregator's endpoint
    # The page's policy allows the relay's origin, and nothing else but its own.
    csp = page.evaluate(
        "() => fetch(location.href).then((r) => r.headers.get('content-security-policy'))"
    )
    assert f"connect-src 'self' {relay.url.rstrip('/')}" in csp


@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_offline_outbox_goes_through_the_relay(
    relayed: tuple[Any, RelayProcess], browser: Any
) -> None:
    server, relay = relayed
    server.create_survey({**SHARED, "relay": relay.url})
    context = browser.new_context()
    try:
        page = first_visit(context, f"{server.url}/s/tablet?device=shared")
        seen = posts(page)
        answer_offline(context, page, 3)
        assert stored_reports(server, "tablet") == []
        context.set_offline(False)
        expect(page.locator("[data-sent]")).to_have_text("3", timeout=30_000)
        reports = stored_reports(server, "tablet")
        assert len(reports) == 3 and len({r["report_id"] for r in reports}) == 3
        assert seen and all(url == relay.url for url in seen), seen
        assert server.results("tablet")["shuffle"]["n"] >= 1
    finally:
        context.close()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_full_relay_makes_the_page_wait_and_send_again(live_server: Any, page: Any) -> None:
    """A relay holding one request at most, in front of a gateway that holds what it gets until
    the test lets it go: while another request fills it, the page's report is answered 503 with
    Retry-After; the page keeps it, sends it again when told, and it is counted once."""
    gateway = f"{live_server.url}/ohttp"
    with held_relay(gateway, batch=1, max_delay=1, queue_limit=1) as (relay, gate):
        sid = live_server.create_survey({**DOC, "relay": relay.url}, fresh=True)["survey"]["id"]
        statuses: list[int] = []
        page.on(
            "response",
            lambda r: (
                statuses.append(r.status)
                if r.url == relay.url and r.request.method == "POST"
                else None
            ),
        )
        page.goto(f"{live_server.url}/s/{sid}")
        expect(page.locator("button[type=submit]")).to_be_enabled()
        filler = threading.Thread(  # any bytes: the gateway refuses them, once let go
            target=lambda: requests.post(
                relay.url,
                data=b"fills the queue",
                headers={"Content-Type": "message/ohttp-req"},
                timeout=60,
            )
        )
        filler.start()
        wait_until_full(relay.url)  # the filler is in, held at the gateway
        fill_and_send(page)
        expect(page.locator("#receipt-status")).to_contain_text("waiting")  # full till let go
        gate.set()
        expect(page.locator("#receipt-status")).to_contain_text("accepted", timeout=30_000)
        filler.join(30)
    assert statuses[0] == 503 and statuses[-1] == 200, statuses
    assert live_server.results(sid)["n"] == 1
