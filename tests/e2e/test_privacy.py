"""Metadata privacy: no address or User-Agent stored, the hour at most, no report in the logs."""

from __future__ import annotations

import copy
import re
import sqlite3
from typing import Any

import pytest
import requests

from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import SURVEY_DOC, TRUTH

AGENT = "PrivacyProbe/9.9 (unique-agent-string)"
FORWARDED = "203.0.113.77"


@pytest.mark.parametrize("backend", ["sqlite"])  # reads the SQLite file itself
def test_stored_reports_keep_no_address_agent_or_fine_time(live_server: Any, backend: str) -> None:
    published = live_server.create_survey(copy.deepcopy(SURVEY_DOC))
    survey = Survey.from_dict(published["survey"])
    reports = [make_report(survey, TRUTH, generate_key()) for _ in range(3)]
    headers = {"User-Agent": AGENT, "X-Forwarded-For": FORWARDED, "X-Real-IP": FORWARDED}
    for report in reports:
        response = requests.post(
            f"{live_server.url}/api/v1/reports", json=report, headers=headers, timeout=10
        )
        assert response.status_code == 201
    bad = requests.post(
        f"{live_server.url}/api/v1/reports",
        json={**reports[0], "report_id": "not-a-uuid"},
        headers=headers,
        timeout=10,
    )
    assert bad.status_code == 422
    process = live_server.process
    process.terminate()
    process.wait(timeout=10)
    log = process.stderr.read().decode()

    database = live_server.data_dir / "deniable.db"
    with sqlite3.connect(database) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(reports)")}
        hours = [row[0] for row in conn.execute("SELECT received_hour FROM reports")]
    conn.close()
    assert columns == {"seq", "report_id", "survey_id", "public_key", "body", "received_hour"}
    assert len(hours) == 3 and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:00:00Z", h) for h in hours)
    raw = b"".join(
        path.read_bytes()
        for path in live_server.data_dir.iterdir()
        if path.name.startswith("deniable.db")
    )
    for secret in (AGENT, FORWARDED, "127.0.0.1", "PrivacyProbe"):
        assert secret.encode() not in raw

    assert "POST /api/v1/reports" not in log  # no request lines (they carry addresses)
    assert FORWARDED not in log and AGENT not in log
    for report in reports:
        assert report["report_id"] not in log and report["signature"] not in log
