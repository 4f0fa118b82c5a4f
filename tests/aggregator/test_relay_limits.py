"""Rate limits for reports that come through a relay (docs/anonymity.md#rate-limits-and-relays):
a relay's one address carries many respondents. Unlisted, it is limited like any client (and
refused before any decryption once at its limit); listed in DENIABLE_RELAY_ADDRESSES, the
reports it passes on through /ohttp count against DENIABLE_RELAY_RATE_LIMIT instead, every
report still against its own key, and the same address posting straight to the API, or any
other address posting to /ohttp, keeps DENIABLE_RATE_LIMIT."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask

from deniable.aggregator import create_app, credentials
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.config import ConfigError, from_env
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.client.delivery import classify
from deniable.shared import bhttp, ohttp
from deniable.shared.canonical import canonical_json
from deniable.shared.signing import generate_key
from deniable.shared.survey import Survey
from tests.aggregator.conftest import SURVEY_DOC, TOKEN

RELAY = "198.51.100.9"
TAG = "0123456789abcdef" * 2


def relay_app(tmp_path: Any, **config: Any) -> tuple[Flask, Survey]:
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "data", **config})
    with app.app_context():
        store = get_store()
        store.add_admin_token(credentials.digest(TOKEN), "tests", "2026-01-01T00:00:00Z")
        doc = {**SURVEY_DOC, "relay": "https://relay.example/"}
        record, _ = create_survey(store, doc, who=OPERATOR)
    return app, Survey.from_dict(record.resolved)


def relayed(app: Flask, survey: Survey, report: dict[str, Any], address: str = RELAY) -> Any:
    """POST the report sealed to /ohttp from `address`; (outer status, inner response or the
    outer one when nothing came back sealed)."""
    message = bhttp.Request(
        "POST",
        "https",
        "agg.example",
        "/api/v1/reports",
        (("content-type", "application/json"),),
        canonical_json(report),
    )
    request = ohttp.encapsulate_request(survey.route.config, bhttp.encode_request(message))
    answer = app.test_client().post(
        "/ohttp",
        data=request.encapsulated,
        headers={"Content-Type": ohttp.REQUEST_TYPE, "Deniable-Batch": TAG},
        environ_base={"REMOTE_ADDR": address},
    )
    if answer.status_code == 200 and answer.mimetype == ohttp.RESPONSE_TYPE:
        inner = bhttp.decode_response(request.open_response(answer.data))
        return 200, inner.status, dict(inner.headers), inner.content
    return answer.status_code, answer.status_code, dict(answer.headers), answer.data


def direct(app: Flask, report: dict[str, Any], address: str = RELAY) -> int:
    return (
        app.test_client()
        .post("/api/v1/reports", json=report, environ_base={"REMOTE_ADDR": address})
        .status_code
    )


def assert_waits(answer: Any, report: dict[str, Any], *, sealed: bool) -> str:
    """A 429 the client keeps the report for and sends again after Retry-After; its detail."""
    outer, status, headers, body = answer
    assert status == 429 and (outer == 200) == sealed, answer
    lower = {name.lower(): value for name, value in headers.items()}
    assert int(lower["retry-after"]) >= 1
    assert classify(status, headers, body, report["report_id"]).outcome == "queued"
    return json.loads(body)["detail"]


def test_an_unlisted_relay_is_limited_like_any_client(tmp_path: Any, report_for: Callable) -> None:
    app, survey = relay_app(tmp_path, RATE_LIMIT="2/minute")
    for _ in range(2):
        assert relayed(app, survey, report_for(survey))[1] == 201
    late = report_for(survey)
    # Refused before the request is even opened: an outer problem the relay passes back.
    detail = assert_waits(relayed(app, survey, late), late, sealed=False)
    assert "from this address" in detail
    assert direct(app, report_for(survey)) == 429  # one counter for the address, either path
    assert relayed(app, survey, report_for(survey), address="192.0.2.1")[1] == 201


def test_a_listed_relay_has_its_own_allowance(tmp_path: Any, report_for: Callable) -> None:
    app, survey = relay_app(
        tmp_path,
        RATE_LIMIT="2/minute",
        RELAY_ADDRESSES="198.51.100.0/24, 2001:db8::/64",
        RELAY_RATE_LIMIT="5/minute",
    )
    for _ in range(5):  # more than one client's 2
        assert relayed(app, survey, report_for(survey))[1] == 201
    late = report_for(survey)
    detail = assert_waits(relayed(app, survey, late), late, sealed=False)
    assert "through this relay" in detail and "5 per 1 minute" in detail
    # The relay's address posting straight to the API is one client: DENIABLE_RATE_LIMIT.
    assert [direct(app, report_for(survey)) for _ in range(3)] == [201, 201, 429]
    # Another address posting sealed reports to /ohttp gets no relay's allowance.
    other = [relayed(app, survey, report_for(survey), address="192.0.2.1")[1] for _ in range(3)]
    assert other == [201, 201, 429]
    assert relayed(app, survey, report_for(survey), address="2001:db8::5")[1] == 201
    # The same relay as a dual-stack socket writes its address: the relay's counter, now full.
    mapped = report_for(survey)
    assert_waits(relayed(app, survey, mapped, address=f"::ffff:{RELAY}"), mapped, sealed=False)
    with app.app_context():
        assert get_store().tallies("habits")[0] == 5 + 2 + 2 + 1


def test_each_relayed_report_still_counts_against_its_key(
    tmp_path: Any, report_for: Callable
) -> None:
    app, survey = relay_app(tmp_path, RATE_LIMIT="2/minute", RELAY_ADDRESSES=RELAY)
    key = generate_key()
    answers = [relayed(app, survey, report_for(survey, key)) for _ in range(3)]
    assert [a[0] for a in answers] == [200, 200, 200]  # the relay is not limited (no allowance)
    third = report_for(survey, key)
    detail = assert_waits(relayed(app, survey, third), third, sealed=True)
    assert "one key" in detail
    for _ in range(10):  # fresh keys: a listed relay without DENIABLE_RELAY_RATE_LIMIT is free
        assert relayed(app, survey, report_for(survey))[1] == 201


def test_relay_addresses_are_checked() -> None:
    found = from_env(
        {
            "DENIABLE_RELAY_ADDRESSES": "203.0.113.7, 2001:db8::/64",
            "DENIABLE_RELAY_RATE_LIMIT": "6000/minute",
        }
    )
    assert [str(n) for n in found["RELAY_ADDRESSES"]] == ["203.0.113.7/32", "2001:db8::/64"]
    for bad, words in (
        ("relay.example.org", "expected an IP address"),
        (",".join(["10.0.0.1"] * 101), "at most 100"),
        # A relay's address with a slip of the prefix was taken as its network: here, every
        # address (each sender to /ohttp then had the relays' allowance).
        ("203.0.113.7/0", "names the network 0.0.0.0/0"),
        ("203.0.113.7/24", "names the network 203.0.113.0/24"),
        ("::/0", "is every address"),
        ("x" * 5000, "expected an IP address"),
    ):
        with pytest.raises(ConfigError, match="DENIABLE_RELAY_ADDRESSES") as refused:
            from_env({"DENIABLE_RELAY_ADDRESSES": bad})
        assert words in str(refused.value) and "\n" not in str(refused.value)
        assert len(str(refused.value)) < 200
    with pytest.raises(ConfigError, match="DENIABLE_RELAY_RATE_LIMIT"):
        from_env({"DENIABLE_RELAY_RATE_LIMIT": "lots"})
    with pytest.raises(ConfigError, match="RELAY_ADDRESSES"):
        create_app({"TESTING": True, "RELAY_ADDRESSES": "not an address"})


def test_relay_addresses_given_as_a_list_or_as_ipv6_mapped_are_the_relay(
    tmp_path: Any, report_for: Callable
) -> None:
    # A list of texts (create_app's overrides) was kept as texts: every report then failed (500).
    for given in ([RELAY], f"::ffff:{RELAY}"):  # the mapped form used to match no client
        app, survey = relay_app(
            tmp_path / str(len(given)),
            RATE_LIMIT="1/minute",
            RELAY_ADDRESSES=given,
            RELAY_RATE_LIMIT="3/minute",
        )
        assert [relayed(app, survey, report_for(survey))[1] for _ in range(4)] == [201] * 3 + [429]
    with pytest.raises(ConfigError, match="RELAY_ADDRESSES"):
        create_app({"TESTING": True, "RELAY_ADDRESSES": 7})


def test_with_relays_listed_only_a_listed_relay_tags_a_batch(
    tmp_path: Any, report_for: Callable
) -> None:
    """Anyone could post sealed reports to /ohttp with a relay's batch tag and swell the batch
    (and with it the survey's shuffle n): with DENIABLE_RELAY_ADDRESSES set, only a listed
    relay's tag counts; every report is accepted either way."""
    app, survey = relay_app(tmp_path, RELAY_ADDRESSES=RELAY)
    assert relayed(app, survey, report_for(survey))[1] == 201  # the relay: its batch has 1
    for _ in range(3):  # someone else, the same tag: accepted, not counted in the batch
        assert relayed(app, survey, report_for(survey), address="192.0.2.1")[1] == 201
    with app.app_context():
        assert get_store().smallest_batch(survey.id) == 1
    unlisted, survey2 = relay_app(tmp_path / "open")
    for _ in range(2):  # no relay listed: every sender's tag counts (the documented default)
        assert relayed(unlisted, survey2, report_for(survey2), address="192.0.2.1")[1] == 201
    with unlisted.app_context():
        assert get_store().smallest_batch(survey2.id) == 2
