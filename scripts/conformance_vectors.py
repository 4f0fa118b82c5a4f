"""Write tests/conformance/*.json from the Python protocol (deniable.shared).

    .venv/bin/python scripts/conformance_vectors.py

The vectors pin what every implementation of the protocol must produce byte for byte: the
canonical JSON of tricky values, survey hashes of example surveys, and a report signed with
RFC 8032's first test key. tests/shared/test_conformance.py checks that Python still agrees
with them, tests/browser/test_conformance_js.py that static/deniable.js does.

delivery.json is the delivery policy (what an answer to POST /api/v1/reports means for a
report), written here by hand, not computed: tests/client/test_delivery_conformance.py holds
deniable.client.delivery to it, tests/browser/test_conformance_js.py deniable.js.
"""

from __future__ import annotations

import json
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from deniable.shared import Survey
from deniable.shared.canonical import b64url_encode, canonical_json
from deniable.shared.report import signed_bytes
from deniable.shared.text import bloom_bits, normalize_text, sketch_column, text_hash

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "tests" / "conformance"
#: RFC 8032 section 7.1, TEST 1.
RFC8032_SECRET = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"

VALUES: list[object] = [
    0.1,
    1e-05,
    1.5e-07,
    0.0001,
    123456.789,
    1e16,
    1.5e300,
    1000000000000000.5,
    5e-324,
    1.7976931348623157e308,
    -0.5,
    -2.5e-10,
    0,
    -1,
    9007199254740991,
    0.731058578630,
    "é and ü",
    'quote " backslash \\ newline \n tab \t bell \u0007 del \u007f',
    "\u2028\u2029 line separators",
    "emoji 😀 and CJK 漢字",
    {"b": 1, "a": [True, False, None], "B": {"z": 0.5, "y": []}},
    {"\uffff": 1, "😀": 2, "a": 3, "B": 4, "é": 5},
    [[], {}, "", [0.25, "x"]],
]

SURVEYS: list[dict[str, object]] = [
    {
        "id": "health-2026",
        "title": "Health habits 2026",
        "questions": [
            {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
            {
                "id": "cannabis",
                "text": "Cannabis in the last 6 months?",
                "type": "binary",
                "mechanism": "coins",
                "coins": {"truth": 0.5, "yes": 0.5},
            },
            {
                "id": "party",
                "text": "Which party would you vote for?",
                "type": "categorical",
                "options": ["A", "B", "C", "D"],
                "epsilon": 2.0,
                "mechanism": "auto",
            },
        ],
    },
    {
        "id": "forced-response",
        "title": "Ünïcode tïtle, «quotes» and a die",
        "description": "Line one\nline two",
        "enrollment": "invite",
        "closes_at": "2026-12-31T00:00:00Z",
        "questions": [
            {
                "id": "cheated",
                "text": "Cheated?",
                "type": "binary",
                "mechanism": "coins",
                "coins": {"truth": "2/3", "yes": "1/2"},
            },
            {
                "id": "apps",
                "text": "Apps?",
                "type": "categorical",
                "options": ["mail", "maps", "chat", "news", "games", "bank", "shop", "tv"],
                "mechanism": "oue",
                "epsilon": 0.7,
            },
            {
                "id": "region",
                "text": "Region?",
                "type": "categorical",
                "options": ["north", "south", "east"],
                "mechanism": "grr",
                "grr": {"keep": "3/5"},
            },
        ],
    },
    {
        "id": "numbers",
        "title": "Numbers and select-all",
        "questions": [
            {
                "id": "drinks",
                "text": "Drinks last week?",
                "type": "integer",
                "min": 0,
                "max": 20,
                "epsilon": 1.0,
            },
            {
                "id": "temperature",
                "text": "Room temperature?",
                "type": "integer",
                "min": -40,
                "max": 1000000000,
                "mechanism": "onebit",
                "onebit": {"keep": "3/4"},
            },
            {
                "id": "used",
                "text": "Ever used?",
                "type": "multi",
                "options": ["cannabis", "ecstasy", "LSD"],
                "epsilon": 3.0,
            },
            {
                "id": "age",
                "text": "Age?",
                "type": "integer",
                "min": -5,
                "max": 120,
                "mechanism": "none",
            },
            {
                "id": "apps",
                "text": "Apps?",
                "type": "multi",
                "options": ["mail", "chat"],
                "mechanism": "none",
            },
        ],
    },
    {
        "id": "words",
        "title": "Answers in your own words",
        "questions": [
            {
                "id": "city",
                "text": "Where were you born?",
                "type": "text",
                "epsilon": 4.0,
                "candidates": ["Lagos", " PORT  harcourt", "São Paulo"],
            },
            {
                "id": "app",
                "text": "Main app?",
                "type": "text",
                "mechanism": "cms",
                "cms": {"k": 8, "m": 64, "keep": "3/4"},
            },
            {
                "id": "drug",
                "text": "Drug?",
                "type": "text",
                "mechanism": "rappor",
                "rappor": {"k": 32, "h": 2, "m": 8, "f": "1/2", "p": "1/2", "q": "3/4"},
            },
        ],
    },
    {
        "id": "languages-and-skips",
        "title": "Smoking",
        "description": "Two minutes.",
        "language": "en",
        "questions": [
            {
                "id": "smokes",
                "text": "Do you smoke?",
                "type": "binary",
                "mechanism": "none",
                "note": "About tobacco only.",
            },
            {
                "id": "daily",
                "text": "Every day?",
                "type": "binary",
                "epsilon": 1.0,
                "hint": "Most days counts.",
                "relevant": "smokes == 'yes'",
            },
        ],
        "translations": {
            "ar": {
                "title": "التدخين",
                "description": "دقيقتان.",
                "questions": {
                    "smokes": {"text": "هل تدخن؟", "options": ["لا", "نعم"], "note": "التبغ فقط."},
                    "daily": {"text": "كل يوم؟", "options": ["لا", "نعم"], "hint": "معظم الأيام."},
                },
            },
            "fr": {
                "title": "Tabac",
                "description": "Deux minutes.",
                "questions": {
                    "smokes": {"text": "Fumez-vous ?", "options": ["non", "oui"], "note": "Tabac."},
                    "daily": {
                        "text": "Chaque jour ?",
                        "options": ["non", "oui"],
                        "hint": "Presque.",
                    },
                },
            },
        },
    },
]


#: Text for the normalization and hash vectors: case, compatibility forms, every kind of white
#: space Python's split knows, final sigma, dotted capital I, emoji, CJK, combining marks.
TEXTS: list[str] = [
    "",
    "Lagos",
    "  Port   Harcourt ",
    "Ｌａｇｏｓ",
    "ﬁsh\u00a0and\u2003chips",
    "a\tb\nc\x0bd\x0ce\rf\x1cg\x1dh\x1ei\x1fj\x85k\u1680l\u2028m\u2029n\u205fo\u3000p",
    "ΟΔΟΣ ΟΔΟΣ",
    "İstanbul",
    "São Paulo",
    "Sa\u0303o Paulo",
    "東京",
    "🙂 cannabis",
    "x" * 300,
]


def text_vectors() -> list[dict[str, object]]:
    """Per text: its normalized form, H of it, its sketch columns and RAPPOR Bloom bits."""
    out = []
    for raw in TEXTS:
        text = normalize_text(raw)
        out.append(
            {
                "text": raw,
                "normalized": text,
                "hash": str(text_hash(text)),
                "columns": [sketch_column(j, text, 1024) for j in range(4)],
                "bloom": [sorted(bloom_bits(c, text, 2, 32)) for c in range(3)],
            }
        )
    return out


#: The clock of every delivery vector (Wed, 18 Nov 2026 11:06:40 GMT), for Retry-After dates.
DELIVERY_NOW = 1_795_000_000
#: The report each vector classifies, and one it does not.
MINE = "7d0c1b6e-3f0a-4a55-9f1e-2a9b8c4d5e6f"
OTHER = "0f8fad5b-d9cb-469f-a165-70867728950e"
PROBLEM = "application/problem+json"
HTML = "text/html; charset=utf-8"
NOT_OURS = "not the aggregator's answer"
NO_RESULT = "no result for this report"
#: A hostile detail (escape sequences, NUL, a bidi override, far too long) and what is shown.
HOSTILE = "bad\x1b]0;owned\x07\r\nSet: x\x00 \u202egnp.exe " + "y" * 5000
HOSTILE_SHOWN = ("bad ]0;owned Set: x gnp.exe " + "y" * 400)[:299] + "…"
REJECTING = (400, 401, 403, 404, 409, 413, 422)
TRANSIENT = (408, 425, 429, 500, 502, 503, 504)


def _problem(status: int, detail: str | None = None, **extra: object) -> str:
    body: dict[str, object] = {"type": "about:blank", "title": "Error", "status": status}
    if detail is not None:
        body["detail"] = detail
    return json.dumps({**body, **extra}, ensure_ascii=False)


def _result(result: str, report_id: str = MINE, **extra: object) -> dict[str, object]:
    return {"report_id": report_id, "result": result, **extra}


def _case(
    name: str,
    status: int,
    content_type: str | None,
    body: object,
    expected: tuple[str, str | None, int | None],
    *,
    headers: dict[str, str] | None = None,
    index: int | None = None,
) -> dict[str, object]:
    """One vector: an answer (body as text; a dict or list is written as JSON) and what it
    means for the report MINE, sent alone (index null) or as item `index` of a batch."""
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    outcome, reason, wait = expected
    return {
        "name": name,
        "status": status,
        "content_type": content_type,
        "headers": headers or {},
        "body": text,
        "report_id": MINE,
        "index": index,
        "now": DELIVERY_NOW,
        "expected": {"outcome": outcome, "reason": reason, "retry_after_seconds": wait},
    }


def delivery_vectors() -> list[dict[str, object]]:
    """The delivery policy, case by case, each expectation written by hand."""
    json_type = "application/json"
    cases = [
        _case("201 accepted", 201, json_type, _result("accepted"), ("accepted", None, None)),
        _case("200 duplicate", 200, json_type, _result("duplicate"), ("duplicate", None, None)),
        _case(
            "201 accepted, Retry-After ignored",
            201,
            json_type,
            _result("accepted"),
            ("accepted", None, None),
            headers={"Retry-After": "60"},
        ),
        _case(
            "200 rejected naming the report",
            200,
            json_type,
            _result("rejected", reason="survey: closed"),
            ("rejected", "survey: closed", None),
        ),
        _case(
            "201 for another report",
            201,
            json_type,
            _result("accepted", OTHER),
            ("queued", f"HTTP 201: {NO_RESULT}", None),
        ),
        _case(
            "201 naming no report",
            201,
            json_type,
            {"result": "accepted"},
            ("queued", f"HTTP 201: {NO_RESULT}", None),
        ),
        _case(
            "201 with an unknown result",
            201,
            json_type,
            _result("maybe"),
            ("queued", f"HTTP 201: {NO_RESULT}", None),
        ),
        _case(
            "200 not JSON",
            200,
            HTML,
            "<html>all good</html>",
            ("queued", f"HTTP 200: {NO_RESULT}", None),
        ),
        _case("200 empty", 200, None, "", ("queued", f"HTTP 200: {NO_RESULT}", None)),
        _case(
            "200 truncated JSON",
            200,
            json_type,
            '{"report_id": "' + MINE + '", "result": "acc',
            ("queued", f"HTTP 200: {NO_RESULT}", None),
        ),
        _case(
            "200 deeply nested",
            200,
            json_type,
            "[" * 5000 + "]" * 5000,
            ("queued", f"HTTP 200: {NO_RESULT}", None),
        ),
        _case("204 no content", 204, None, "", ("queued", f"HTTP 204: {NO_RESULT}", None)),
        _case(
            "202 without a result, Retry-After",
            202,
            json_type,
            {"status": "later"},
            ("queued", f"HTTP 202: {NO_RESULT}", 30),
            headers={"Retry-After": "30"},
        ),
        _case(
            "a problem at 200 is no result",
            200,
            PROBLEM,
            _problem(200, "fine"),
            ("queued", f"HTTP 200: {NO_RESULT}", None),
        ),
    ]
    for status in REJECTING:
        detail = f"refused with {status}: say what to change"
        cases.append(
            _case(
                f"{status} problem+json",
                status,
                PROBLEM,
                _problem(status, detail),
                ("rejected", detail, None),
            )
        )
        cases.append(
            _case(
                f"{status} problem+json, Retry-After ignored",
                status,
                PROBLEM,
                _problem(status, detail),
                ("rejected", detail, None),
                headers={"Retry-After": "5"},
            )
        )
        cases.append(
            _case(
                f"{status} from a proxy (HTML)",
                status,
                HTML,
                f"<html><h1>{status}</h1></html>",
                ("queued", f"HTTP {status}: {NOT_OURS}", None),
            )
        )
        cases.append(
            _case(
                f"{status} problem-shaped application/json",
                status,
                json_type,
                _problem(status, detail),
                ("queued", f"HTTP {status}: {NOT_OURS}", None),
            )
        )
    cases += [
        _case(
            "409 our own rejection of the report",
            409,
            PROBLEM,
            _problem(
                409,
                "answers: party: 7 is not an option",
                **_result("rejected", reason="answers: party: 7 is not an option"),
            ),
            ("rejected", "answers: party: 7 is not an option", None),
        ),
        _case(
            "422 problem+json with charset, any case",
            422,
            "Application/Problem+JSON ; charset=utf-8",
            _problem(422, "sent_at: more than 2 days old"),
            ("rejected", "sent_at: more than 2 days old", None),
        ),
        _case(
            "422 problem+json naming another report",
            422,
            PROBLEM,
            _problem(422, "signature: does not verify", **_result("rejected", OTHER)),
            ("rejected", "signature: does not verify", None),
        ),
        _case(
            "403 problem+json: reason when no detail",
            403,
            PROBLEM,
            json.dumps({"status": 403, "reason": "survey: invite only"}),
            ("rejected", "survey: invite only", None),
        ),
        _case(
            "403 problem+json: title when no detail or reason",
            403,
            PROBLEM,
            json.dumps({"title": "Forbidden", "detail": " \t "}),
            ("rejected", "Forbidden", None),
        ),
        _case(
            "403 problem+json saying nothing",
            403,
            PROBLEM,
            json.dumps({"status": 403, "detail": 7}),
            ("rejected", "HTTP 403", None),
        ),
        _case(
            "422 problem+json with a hostile detail",
            422,
            PROBLEM,
            _problem(422, HOSTILE),
            ("rejected", HOSTILE_SHOWN, None),
        ),
        _case(
            "422 problem+json that is not JSON",
            422,
            PROBLEM,
            "<html>refused</html>",
            ("queued", f"HTTP 422: {NOT_OURS}", None),
        ),
        _case(
            "422 problem+json that is a list",
            422,
            PROBLEM,
            '["refused"]',
            ("queued", f"HTTP 422: {NOT_OURS}", None),
        ),
        _case(
            "404 HTML whose body says rejected",
            404,
            HTML,
            _result("rejected", reason="x"),
            ("queued", f"HTTP 404: {NOT_OURS}", None),
        ),
        _case(
            "application/problem+jsonx is not a problem",
            422,
            "application/problem+jsonx",
            _problem(422, "refused"),
            ("queued", f"HTTP 422: {NOT_OURS}", None),
        ),
    ]
    for status in TRANSIENT:
        detail = f"busy ({status}): try again shortly"
        cases.append(
            _case(
                f"{status} problem+json",
                status,
                PROBLEM,
                _problem(status, detail),
                ("queued", f"HTTP {status}: {detail}", None),
            )
        )
        cases.append(
            _case(
                f"{status} problem+json, Retry-After: 1",
                status,
                PROBLEM,
                _problem(status, detail),
                ("queued", f"HTTP {status}: {detail}", 1),
                headers={"Retry-After": "1"},
            )
        )
        cases.append(
            _case(
                f"{status} from a proxy (HTML)",
                status,
                HTML,
                "<html>Bad gateway</html>",
                ("queued", f"HTTP {status}: {NOT_OURS}", None),
            )
        )
    cases += [
        _case(
            "503 problem+json without a detail",
            503,
            PROBLEM,
            json.dumps({"status": 503}),
            ("queued", "HTTP 503: no detail", None),
        ),
        _case(
            "599 problem+json",
            599,
            PROBLEM,
            _problem(599, "odd"),
            ("queued", "HTTP 599: odd", None),
        ),
        _case("600 from nowhere", 600, HTML, "", ("queued", f"HTTP 600: {NOT_OURS}", None)),
    ]
    for status in (301, 302, 303, 307, 308):
        cases.append(
            _case(
                f"{status} redirect",
                status,
                HTML,
                "",
                ("queued", f"HTTP {status}: a redirect, not the aggregator's answer", None),
                headers={"Location": "https://elsewhere.example/api/v1/reports"},
            )
        )
    busy = _problem(503, "the database is unavailable or busy; try again shortly")
    busy_reason = "HTTP 503: the database is unavailable or busy; try again shortly"
    for name, value, wait in [
        ("seconds", "5", 5),
        ("zero", "0", 0),
        ("leading zeros", "0007", 7),
        ("white space around", " \t7 ", 7),
        ("a day", "86400", 86400),
        ("over a day, capped", "100000", 86400),
        ("fifty digits, capped", "9" * 50, 86400),
        ("an HTTP date 2 minutes ahead", "Wed, 18 Nov 2026 11:08:40 GMT", 120),
        ("an HTTP date now", "Wed, 18 Nov 2026 11:06:40 GMT", 0),
        ("an HTTP date past", "Wed, 18 Nov 2026 10:06:40 GMT", 0),
        ("an HTTP date 2 days ahead, capped", "Fri, 20 Nov 2026 11:06:40 GMT", 86400),
        ("an HTTP date, weekday not checked", "Mon, 18 Nov 2026 11:08:40 GMT", 120),
        ("negative", "-5", None),
        ("a fraction", "1.5", None),
        ("a word", "soon", None),
        ("empty", "", None),
        ("Arabic-Indic digits", "\u0663", None),
        ("30 February", "Mon, 30 Feb 2026 10:00:00 GMT", None),
        ("hour 24", "Wed, 18 Nov 2026 24:00:00 GMT", None),
        ("a leap second", "Wed, 18 Nov 2026 11:06:60 GMT", None),
        ("UTC, not GMT", "Wed, 18 Nov 2026 11:08:40 UTC", None),
        ("RFC 850 date (obsolete)", "Wednesday, 18-Nov-26 11:08:40 GMT", None),
        ("asctime date (obsolete)", "Wed Nov 18 11:08:40 2026", None),
        ("lower-case month", "Wed, 18 nov 2026 11:08:40 GMT", None),
        ("before 1970", "Thu, 01 Jan 1960 00:00:00 GMT", None),
        ("year 0", "Sat, 01 Jan 0000 00:00:00 GMT", None),
    ]:
        cases.append(
            _case(
                f"Retry-After: {name}",
                503,
                PROBLEM,
                busy,
                ("queued", busy_reason, wait),
                headers={"Retry-After": value},
            )
        )
    cases.append(
        _case(
            "Retry-After: header name in lower case",
            429,
            PROBLEM,
            _problem(429, "slow down"),
            ("queued", "HTTP 429: slow down", 3),
            headers={"retry-after": "3"},
        )
    )
    batch = {
        "results": [
            _result("accepted"),
            _result("duplicate"),
            _result("rejected", reason="signature: does not verify"),
        ]
    }
    for index, outcome in enumerate(["accepted", "duplicate", "rejected"]):
        results = [{**r, "report_id": OTHER} for r in batch["results"]]
        results[index] = batch["results"][index]
        reason = "signature: does not verify" if outcome == "rejected" else None
        cases.append(
            _case(
                f"batch 200, item {index} {outcome}",
                200,
                json_type,
                {"results": results},
                (outcome, reason, None),
                index=index,
            )
        )
    cases += [
        _case(
            "batch 201 whose result is rejected",
            201,
            json_type,
            {"results": [_result("accepted", OTHER), _result("rejected", reason="survey: closed")]},
            ("rejected", "survey: closed", None),
            index=1,
        ),
        _case(
            "batch result naming another report (out of place)",
            200,
            json_type,
            {"results": [_result("accepted", OTHER), _result("accepted")]},
            ("queued", f"HTTP 200: {NO_RESULT}", None),
            index=0,
        ),
        _case(
            "batch with too few results",
            200,
            json_type,
            {"results": [_result("accepted", OTHER)]},
            ("queued", f"HTTP 200: {NO_RESULT}", None),
            index=1,
        ),
        _case(
            "batch answered with a lone result",
            200,
            json_type,
            _result("accepted"),
            ("queued", f"HTTP 200: {NO_RESULT}", None),
            index=0,
        ),
        _case(
            "batch whose results are not a list",
            200,
            json_type,
            {"results": {"0": _result("accepted")}},
            ("queued", f"HTTP 200: {NO_RESULT}", None),
            index=0,
        ),
        _case(
            "batch refused as a whole (413 problem+json)",
            413,
            PROBLEM,
            _problem(413, "a batch holds at most 500 reports, got 600; send smaller batches"),
            ("rejected", "a batch holds at most 500 reports, got 600; send smaller batches", None),
            index=3,
        ),
        _case(
            "batch 503 problem+json, Retry-After",
            503,
            PROBLEM,
            busy,
            ("queued", busy_reason, 5),
            headers={"Retry-After": "5"},
            index=0,
        ),
        _case(
            "batch 429 from a proxy",
            429,
            "text/plain",
            "Too Many Requests",
            ("queued", f"HTTP 429: {NOT_OURS}", None),
            index=0,
        ),
    ]
    return cases


#: A wave of a series with each memoized mechanism (docs/surveys.md#waves): longitudinal.json.
WAVE: dict[str, object] = {
    "id": "panel-2026-w1",
    "title": "Panel 2026, wave 1",
    "series": "panel-2026",
    "wave": 1,
    "questions": [
        {
            "id": "smokes",
            "text": "Do you smoke?",
            "type": "binary",
            "longitudinal": {"epsilon_perm": 2.0, "epsilon_1": 1.0},
        },
        {
            "id": "party",
            "text": "Which party?",
            "type": "categorical",
            "options": ["A", "B", "C"],
            "longitudinal": {"epsilon_perm": 3, "epsilon_1": 1.5},
        },
        {
            "id": "mood",
            "text": "Your mood?",
            "type": "categorical",
            "options": ["low", "fair", "high"],
            "mechanism": "oue",
            "longitudinal": {"epsilon_perm": 2.5, "epsilon_1": 1},
        },
    ],
}


def longitudinal_vectors() -> dict[str, object]:
    """The wave's resolved survey and hash, and for each question both rounds' exact
    probabilities: memo[i][m] = P[memo m | true option i], report[m][r] = P[report r | memo m]
    over `outputs` (the wire answers), as "num/den" text."""
    survey = Survey.from_dict(WAVE)
    questions = []
    for qid, question in survey.questions.items():
        chain = question.longitudinal
        assert chain is not None
        outputs = list(chain.outputs())
        questions.append(
            {
                "id": qid,
                "outputs": outputs,
                "memo": [
                    [str(chain.memo_probability(m, i)) for m in outputs] for i in range(chain.k)
                ],
                "report": [[str(chain.report_probability(r, m)) for r in outputs] for m in outputs],
            }
        )
    return {"survey": survey.to_dict(), "hash": survey.hash, "questions": questions}


def vectors() -> dict[str, object]:
    """Every vector file's content, computed by the Python protocol (delivery.json: by hand)."""
    canonical = [{"value": v, "canonical": canonical_json(v).decode("utf-8")} for v in VALUES]
    surveys = [Survey.from_dict(doc) for doc in SURVEYS]
    hashes = [{"survey": s.to_dict(), "hash": s.hash} for s in surveys]
    key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(RFC8032_SECRET))
    public = key.public_key().public_bytes_raw()
    report: dict[str, object] = {
        "v": 1,
        "survey": surveys[0].id,
        "survey_hash": surveys[0].hash,
        "answers": {"smokes": 1, "cannabis": 0, "party": 2},
        "report_id": "0f8fad5b-d9cb-469f-a165-70867728950e",
        "sent_at": "2026-11-22T18:00:00Z",
        "public_key": b64url_encode(public),
    }
    signed_text = signed_bytes(report)
    report["signature"] = b64url_encode(key.sign(signed_text))
    signed = {
        "secret_key_hex": RFC8032_SECRET,
        "public_key_hex": public.hex(),
        "signed_text": signed_text.decode("utf-8"),
        "report": report,
    }
    return {
        "canonical.json": canonical,
        "survey_hashes.json": hashes,
        "signed_report.json": signed,
        "text.json": text_vectors(),
        "delivery.json": delivery_vectors(),
        "longitudinal.json": longitudinal_vectors(),
    }


def main() -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    for name, content in vectors().items():
        text = json.dumps(content, indent=1, ensure_ascii=False) + "\n"
        (FOLDER / name).write_text(text, encoding="utf-8")
        print(FOLDER / name)


if __name__ == "__main__":
    main()
