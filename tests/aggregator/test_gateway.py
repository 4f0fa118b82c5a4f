"""The aggregator as an OHTTP gateway (aggregator/web/gateway.py, gateway_keys.py,
store/gateway.py): its key configuration, a sealed report counted as if posted, what it refuses
and how (a changed request stays the sender's to resend, a key it does not hold is dropped),
rotation with an overlap, surveys pinned to the current key, relay batches counted by survey
and plain answers, and the results' "shuffle"."""

from __future__ import annotations

import json
from typing import Any

import pytest

from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.core import cli
from deniable.aggregator.gateway import keys as gateway_keys
from deniable.aggregator.stats.shuffle import central_epsilon
from deniable.aggregator.surveys import create_survey, results
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.gateway import EXTENSION
from deniable.client.delivery import classify
from deniable.shared import bhttp, ohttp
from deniable.shared.canonical import canonical_json
from deniable.shared.errors import SurveyError
from deniable.shared.report import make_report
from deniable.shared.signing import generate_key
from deniable.shared.survey import Survey
from tests.aggregator.conftest import TOKEN, TRUTH

TAG = "0123456789abcdef" * 2


def relay_doc(survey_doc: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**survey_doc, "id": "relayed", "relay": "https://relay.example/", **extra}


def sealed(survey: Survey, report: dict[str, Any], path: str = "/api/v1/reports") -> Any:
    body = canonical_json(report)
    message = bhttp.Request(
        "POST", "https", "agg.example", path, (("content-type", "application/json"),), body
    )
    return ohttp.encapsulate_request(survey.route.config, bhttp.encode_request(message))


def post(client: Any, request: Any, tag: str | None = TAG) -> Any:
    headers = {"Content-Type": ohttp.REQUEST_TYPE}
    if tag:
        headers["Deniable-Batch"] = tag
    return client.post("/ohttp", data=request.encapsulated, headers=headers)


@pytest.fixture
def relayed(app: Any, survey_doc: dict[str, Any]) -> Survey:
    with app.app_context():
        record, _ = create_survey(get_store(), relay_doc(survey_doc), who=OPERATOR)
    return Survey.from_dict(record.resolved)


def test_the_keys_resource_is_the_current_key_pinned_in_surveys(
    app: Any, client: Any, relayed: Survey
) -> None:
    answer = client.get("/.well-known/ohttp-keys")
    assert answer.status_code == 200 and answer.headers["Content-Type"] == ohttp.KEYS_TYPE
    (config,) = ohttp.parse_key_configs(answer.data)
    assert config.usable and config == relayed.route.config
    assert relayed.to_dict()["ohttp_keys"] == ohttp.keys_text([config])


def test_a_sealed_report_is_answered_as_a_direct_post_and_counted_in_its_batch(
    app: Any, client: Any, relayed: Survey
) -> None:
    report = make_report(relayed, TRUTH, generate_key())
    request = sealed(relayed, report)
    answer = post(client, request)
    assert answer.status_code == 200 and answer.headers["Content-Type"] == ohttp.RESPONSE_TYPE
    inner = bhttp.decode_response(request.open_response(answer.data))
    assert inner.status == 201
    assert json.loads(inner.content) == {"report_id": report["report_id"], "result": "accepted"}
    again = sealed(relayed, report)  # the outbox sends it again: a duplicate, never counted twice
    inner = bhttp.decode_response(again.open_response(post(client, again).data))
    assert inner.status == 200 and json.loads(inner.content)["result"] == "duplicate"
    with app.app_context():
        assert get_store().tallies("relayed")[0] == 1
        assert get_store().smallest_batch("relayed") == 1


def test_a_refused_report_comes_back_refused_inside(app: Any, client: Any, relayed: Survey) -> None:
    report = {**make_report(relayed, TRUTH, generate_key()), "signature": "A" * 86}
    request = sealed(relayed, report)
    inner = bhttp.decode_response(request.open_response(post(client, request).data))
    assert inner.status == 422 and inner.header("content-type") == "application/problem+json"
    found = classify(inner.status, dict(inner.headers), inner.content, report["report_id"])
    assert found.outcome == "rejected"


def test_a_changed_request_is_refused_and_stays_queued(client: Any, relayed: Survey) -> None:
    request = sealed(relayed, make_report(relayed, TRUTH, generate_key()))
    changed = bytearray(request.encapsulated)
    changed[-3] ^= 0x40
    answer = client.post(
        "/ohttp", data=bytes(changed), headers={"Content-Type": ohttp.REQUEST_TYPE}
    )
    assert answer.status_code == 400
    assert answer.headers["Content-Type"].startswith("text/plain")
    assert classify(400, dict(answer.headers), answer.data, "x").outcome == "queued"


def test_a_key_it_does_not_hold_is_an_ohttp_key_problem(client: Any, relayed: Survey) -> None:
    stranger = ohttp.new_gateway_key(200)
    request = ohttp.encapsulate_request(stranger.config, b"\x00")
    answer = client.post(
        "/ohttp", data=request.encapsulated, headers={"Content-Type": ohttp.REQUEST_TYPE}
    )
    assert answer.status_code == 400
    assert answer.json["type"] == ohttp.KEY_PROBLEM and "key 200" in answer.json["detail"]


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/api/v1/surveys", None, 404, "only /api/v1/reports"),
        ("/api/v1/reports", {"reports": []}, 422, "one report per encapsulated request"),
    ],
)
def test_only_one_report_post_goes_through(
    client: Any, relayed: Survey, path: str, body: Any, status: int, words: str
) -> None:
    message = bhttp.Request(
        "POST", "https", "a", path, (("content-type", "application/json"),), canonical_json(body)
    )
    request = ohttp.encapsulate_request(relayed.route.config, bhttp.encode_request(message))
    inner = bhttp.decode_response(request.open_response(post(client, request).data))
    assert inner.status == status and words in json.loads(inner.content)["detail"]


def test_requests_that_are_not_ohttp_are_problems(client: Any) -> None:
    assert (
        client.post("/ohttp", data=b"x", headers={"Content-Type": "application/json"}).status_code
        == 415
    )
    assert client.get("/ohttp").status_code == 405
    short = client.post("/ohttp", data=b"\x00\x01", headers={"Content-Type": ohttp.REQUEST_TYPE})
    assert short.status_code == 400 and "too short" in short.get_data(as_text=True)


def test_batches_count_reports_by_plain_answers(app: Any, client: Any) -> None:
    doc = {
        "id": "with-age",
        "title": "With a plain question",
        "relay": "https://relay.example/",
        "questions": [
            {"id": "smokes", "text": "Smoke?", "type": "binary", "epsilon": 2.0},
            {
                "id": "age",
                "text": "Age group?",
                "type": "categorical",
                "options": ["young", "old"],
                "mechanism": "none",
            },
        ],
    }
    with app.app_context():
        survey = Survey.from_dict(create_survey(get_store(), doc, who=OPERATOR)[0].resolved)
    for i, age in enumerate(["young"] * 5 + ["old"] * 2):
        tag = TAG if i < 6 else "f" * 32  # six in one batch, the seventh in another
        report = make_report(survey, {"smokes": "yes", "age": age}, generate_key())
        assert post(client, sealed(survey, report), tag=tag).status_code == 200
    post(
        client,
        sealed(survey, make_report(survey, {"smokes": "no", "age": "old"}, generate_key())),
        tag=None,
    )
    with app.app_context():
        store = get_store()
        assert store.tallies("with-age")[0] == 8
        # batch 1: five young, one old; batch 2: one old; the untagged report is in no batch.
        assert store.smallest_batch("with-age") == 1
        found = results(store, "with-age", who=OPERATOR).to_dict()
    assert found["shuffle"] == {
        "n": 1,
        "delta": 1e-6,
        "epsilon_0": found["shuffle"]["epsilon_0"],
        "epsilon": found["shuffle"]["epsilon_0"],
    }
    assert "shuffle" in found["questions"][0] and "shuffle" not in found["questions"][1]


def test_results_carry_the_central_epsilon_of_the_smallest_batch(app: Any, relayed: Survey) -> None:
    with app.app_context():
        store = get_store()
        for _ in range(3):
            store.count_in_batch("relayed", "a" * 32, "")
        store.count_in_batch("relayed", "b" * 32, "")
        store.count_in_batch("relayed", "b" * 32, "")
        doc = results(store, "relayed", who=OPERATOR).to_dict()
    assert doc["shuffle"]["n"] == 2
    assert doc["shuffle"]["epsilon_0"] == pytest.approx(relayed.epsilon)
    for entry in doc["questions"]:
        question = relayed.questions[entry["id"]]
        assert entry["shuffle"] == {
            "n": 2,
            "delta": 1e-6,
            "epsilon_0": question.epsilon,
            "epsilon": central_epsilon(2, question.epsilon, 1e-6),
        }
        assert entry["shuffle"]["epsilon"] <= entry["shuffle"]["epsilon_0"]


def test_surveys_without_a_relay_keep_their_results_and_hash(
    app: Any, survey_doc: dict[str, Any]
) -> None:
    with app.app_context():
        record, _ = create_survey(get_store(), survey_doc, who=OPERATOR)
        doc = results(get_store(), record.id, who=OPERATOR).to_dict()
    assert "shuffle" not in doc and all("shuffle" not in q for q in doc["questions"])
    assert record.hash == Survey.from_dict(survey_doc).hash
    assert "relay" not in record.resolved and "ohttp_keys" not in record.resolved


def test_an_invite_only_survey_may_not_name_a_relay(
    app: Any, client: Any, invite_doc: dict[str, Any]
) -> None:
    answer = client.post(
        "/api/v1/surveys",
        json={**invite_doc, "relay": "https://relay.example/"},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert answer.status_code == 422
    assert "only an open survey" in answer.json["detail"] and "invitation" in answer.json["detail"]


def test_a_survey_naming_another_key_is_refused(app: Any, survey_doc: dict[str, Any]) -> None:
    other = ohttp.keys_text([ohttp.new_gateway_key(9).config])
    with app.app_context(), pytest.raises(SurveyError, match="not this aggregator's current key"):
        create_survey(get_store(), relay_doc(survey_doc, ohttp_keys=other), who=OPERATOR)


def test_rotation_keeps_the_old_key_for_the_overlap(
    app: Any, client: Any, survey_doc: dict[str, Any]
) -> None:
    with app.app_context():
        store = get_store()
        old = gateway_keys.current_key(store)
        with pytest.raises(SurveyError, match="would take no relayed report"):
            create_survey(store, relay_doc(survey_doc), who=OPERATOR)
            gateway_keys.rotate(store, 1)  # the open survey, without closes_at, outlives a day
        rotation = gateway_keys.rotate(store, 1, force=True)
        assert rotation.current.key_id != old.key_id
        assert [k.key_id for k in rotation.retiring] == [old.key_id]
        assert [record.id for record, _ in rotation.stranded] == ["relayed"]
        pinned = Survey.from_dict(store.get_survey("relayed").resolved)
        assert set(gateway_keys.accepted_keys(store)) == {old.key_id, rotation.current.key_id}
        fresh = create_survey(store, {**relay_doc(survey_doc), "id": "after"}, who=OPERATOR)[0]
        assert ohttp.parse_keys_text(fresh.resolved["ohttp_keys"]).key_id == rotation.current.key_id
    app.extensions[EXTENSION].keys._read_at = -1e9  # as if a minute passed: keys read again
    request = sealed(pinned, make_report(pinned, TRUTH, generate_key()))
    inner = bhttp.decode_response(request.open_response(post(client, request).data))
    assert inner.status == 201  # the old key still opens it during the overlap
    with app.app_context():
        store = get_store()
        # Long after the overlap: a rotation then deletes the keys retired by that time.
        later = "2999-01-01T00:00:00Z"
        store.rotate_ohttp_key(ohttp.new_gateway_key(0).private_key.hex(), later, later)
        assert old.key_id not in gateway_keys.accepted_keys(store)
    app.extensions[EXTENSION].keys._read_at = -1e9
    request = sealed(pinned, make_report(pinned, TRUTH, generate_key()))
    answer = post(client, request)
    assert answer.status_code == 400 and answer.json["type"] == ohttp.KEY_PROBLEM


def test_init_db_makes_a_key_and_rotate_prints_the_new_one(runner: Any, app: Any) -> None:
    assert runner.invoke(cli, ["init-db"]).exit_code == 0
    with app.app_context():
        first = gateway_keys.current_key(get_store())
    done = runner.invoke(cli, ["rotate-ohttp-key", "--overlap", "2"])
    assert done.exit_code == 0, done.output
    text = done.stdout.strip().splitlines()[-1]
    assert ohttp.parse_keys_text(text).key_id != first.key_id
    assert f"key {first.key_id} is accepted until" in done.stderr
    bad = runner.invoke(cli, ["rotate-ohttp-key", "--overlap", "-1"])
    assert bad.exit_code == 1 and "--overlap must be" in bad.stderr
