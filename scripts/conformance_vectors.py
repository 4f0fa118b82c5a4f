"""Write tests/conformance/*.json from the Python protocol (deniable.shared).

    .venv/bin/python scripts/conformance_vectors.py

The vectors pin what every implementation of the protocol must produce byte for byte: the
canonical JSON of tricky values, survey hashes of example surveys, and a report signed with
RFC 8032's first test key. tests/shared/test_conformance.py checks that Python still agrees
with them, tests/browser/test_conformance_js.py that static/deniable.js does.
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


def vectors() -> dict[str, object]:
    """Every vector file's content, computed by the Python protocol."""
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
    }


def main() -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    for name, content in vectors().items():
        text = json.dumps(content, indent=1, ensure_ascii=False) + "\n"
        (FOLDER / name).write_text(text, encoding="utf-8")
        print(FOLDER / name)


if __name__ == "__main__":
    main()
