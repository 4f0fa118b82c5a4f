"""A survey's route (shared/route.py): `"relay"` and `"ohttp_keys"` are part of the survey's hash
(no relay can substitute a key of its own), go together, name a plain http(s) URL and a usable
key, and only an open survey may name them (refused with the reason)."""

from __future__ import annotations

from typing import Any

import pytest

from deniable.shared import ohttp
from deniable.shared.errors import SurveyError
from deniable.shared.route import MAX_RELAY_URL
from deniable.shared.survey import Survey

KEYS = ohttp.keys_text([ohttp.new_gateway_key(1).config])
DOC: dict[str, Any] = {
    "id": "anon",
    "title": "Through a relay",
    "questions": [{"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0}],
}
RELAYED = {**DOC, "relay": "https://relay.example.org/", "ohttp_keys": KEYS}


def test_the_route_is_part_of_the_hash() -> None:
    survey = Survey.from_dict(RELAYED)
    assert survey.route is not None and survey.route.config == ohttp.parse_keys_text(KEYS)
    assert survey.to_dict()["relay"] == RELAYED["relay"] and survey.to_dict()["ohttp_keys"] == KEYS
    other_key = ohttp.keys_text([ohttp.new_gateway_key(1).config])
    hashes = {
        Survey.from_dict(DOC).hash,
        survey.hash,
        Survey.from_dict({**RELAYED, "ohttp_keys": other_key}).hash,  # a relay's own key
        Survey.from_dict({**RELAYED, "relay": "https://other-relay.example.org/"}).hash,
    }
    assert len(hashes) == 4
    assert Survey.from_dict(survey.to_dict()).hash == survey.hash  # the document round-trips
    assert Survey.from_dict(DOC).route is None and "relay" not in Survey.from_dict(DOC).to_dict()


def test_only_an_open_survey_may_name_a_relay() -> None:
    with pytest.raises(SurveyError) as refused:
        Survey.from_dict({**RELAYED, "enrollment": "invite"})
    assert "only an open survey" in str(refused.value)
    assert "invitation links its report to whom it was sent" in str(refused.value)
    assert Survey.from_dict({**RELAYED, "enrollment": "open"}).route is not None


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"relay": None, "ohttp_keys": KEYS}, "goes with relay"),
        ({"ohttp_keys": None}, "needed with relay"),
        ({"ohttp_keys": "bm90IGEga2V5"}, "ohttp_keys:"),
        ({"relay": "ftp://relay.example.org/"}, "is not a relay URL"),
        ({"relay": "https://user:pw@relay.example.org/"}, "is not a relay URL"),
        ({"relay": "https://relay.example.org/?who=me"}, "is not a relay URL"),
        ({"relay": "https://relay.example.org/#x"}, "is not a relay URL"),
        ({"relay": "https://relay.example.org/a b"}, "is not a relay URL"),
        ({"relay": "https://"}, "is not a relay URL"),
        ({"relay": "https://r.example/" + "a" * MAX_RELAY_URL}, f"at most {MAX_RELAY_URL}"),
        ({"relay": 7}, "expected the relay's URL"),
    ],
)
def test_a_bad_route_is_refused_in_one_line(change: dict[str, Any], words: str) -> None:
    doc = {**RELAYED, **change}
    doc = {key: value for key, value in doc.items() if value is not None}
    with pytest.raises(SurveyError) as refused:
        Survey.from_dict(doc)
    assert words in str(refused.value) and "\n" not in str(refused.value)
