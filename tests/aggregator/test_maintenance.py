"""`verify` (and `--repair`), `purge` and retention, `backup`: through the CLI runner."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from deniable.aggregator import create_app, credentials
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.cli.core import cli
from deniable.aggregator.ingest import ingest
from deniable.aggregator.stats.analyze import tally
from deniable.aggregator.store import AuditEntry, Store
from deniable.aggregator.surveys import create_survey
from deniable.aggregator.web.db import get_store
from deniable.aggregator.web.retention import RetentionTimer
from deniable.shared import Survey, hour_now, sign_report
from deniable.shared.signing import generate_key
from tests.aggregator.conftest import TOKEN

OLD = datetime.now(UTC) - timedelta(days=10)


def db_file(app: Flask) -> Path:
    return Path(app.config["DATA_DIR"]) / "deniable.db"


@pytest.fixture
def loaded_survey(
    app: Flask, survey_doc: dict[str, Any], report_for: Any
) -> tuple[Survey, list[Any]]:
    """The survey with 6 reports received 10 days ago (also returned) and 4 received now."""
    with app.app_context():
        store = get_store()
        record, _ = create_survey(store, survey_doc, who=OPERATOR)
        survey = Survey.from_dict(record.resolved)
        old = [report_for(survey, sent_at=hour_now(OLD)) for _ in range(6)]
        assert {o.result for o in ingest(store, old, now=OLD)} == {"accepted"}
        new = [report_for(survey) for _ in range(4)]
        assert {o.result for o in ingest(store, new)} == {"accepted"}
    return survey, old


def state(client: Any, survey_id: str) -> tuple[int, dict[str, list[int]]]:
    doc = client.get(
        f"/api/v1/surveys/{survey_id}/results", headers={"Authorization": f"Bearer {TOKEN}"}
    ).json
    return doc["n"], {q["id"]: [o["support"] for o in q["options"]] for q in doc["questions"]}


def corrupt(app: Flask, survey_id: str) -> None:
    """Change a tally row and n directly in the SQLite file."""
    with sqlite3.connect(db_file(app)) as conn:
        conn.execute(
            "UPDATE tallies SET support = support + 5 "
            "WHERE survey_id = ? AND question_id = 'party' AND option_index = 2",
            (survey_id,),
        )
        conn.execute(
            "UPDATE surveys SET report_count = report_count - 1 WHERE id = ?", (survey_id,)
        )
    conn.close()


def test_verify_finds_a_corrupted_tally_and_repair_fixes_it(runner, client, app, loaded_survey):
    loaded, old = loaded_survey
    good = state(client, loaded.id)
    clean = runner.invoke(cli, ["verify", loaded.id])
    assert clean.exit_code == 0 and "every tally matches" in clean.stdout
    corrupt(app, loaded.id)
    found = runner.invoke(cli, ["verify", loaded.id])
    assert found.exit_code == 1
    assert "party[2]: stored" in found.stdout and "n: stored 9, recounted 10" in found.stdout
    assert found.stderr.startswith("error: ")
    repaired = runner.invoke(cli, ["verify", loaded.id, "--repair"])
    assert repaired.exit_code == 0 and "repaired 2 value(s)" in repaired.stdout
    assert state(client, loaded.id) == good
    assert runner.invoke(cli, ["verify", loaded.id]).exit_code == 0


def test_verify_of_an_unknown_survey_is_an_error(runner):
    result = runner.invoke(cli, ["verify", "nope"])
    assert result.exit_code == 1 and "no survey 'nope'" in result.stderr


def test_purge_keeps_tallies_and_n_and_verify_counts_purged_reports(
    runner, client, app, loaded_survey
):
    loaded, old = loaded_survey
    before = state(client, loaded.id)
    result = runner.invoke(cli, ["purge", "--days", "7"])
    assert result.exit_code == 0, result.output
    assert f"{loaded.id}: purged 6 report(s)" in result.stdout
    assert state(client, loaded.id) == before  # tallies and n stay
    export = client.get(
        f"/api/v1/surveys/{loaded.id}/reports.jsonl", headers={"Authorization": f"Bearer {TOKEN}"}
    ).get_data(as_text=True)
    assert tally(loaded, export)[0] == 4  # only the recent bodies are left
    with sqlite3.connect(db_file(app)) as conn:
        bodies = [row[0] for row in conn.execute("SELECT body FROM reports")]
    conn.close()
    assert sorted(bodies).count("") == 6
    verified = runner.invoke(cli, ["verify", loaded.id])
    assert verified.exit_code == 0 and "6 of them purged" in verified.stdout
    corrupt(app, loaded.id)
    assert runner.invoke(cli, ["verify", loaded.id, "--repair"]).exit_code == 0
    assert state(client, loaded.id) == before  # repaired up to the true totals, not down
    assert runner.invoke(cli, ["purge", "--days", "7"]).stdout.startswith("purged 0")
    with app.app_context():  # a purged report sent again: a duplicate, never counted again
        (outcome,) = ingest(get_store(), old[0], now=OLD)
        assert outcome.result == "duplicate"
        (late,) = ingest(get_store(), old[1])  # its sent_at now too old: still recognized
        assert late.result == "duplicate"
        forged = sign_report({**old[2], "answers": {**old[2]["answers"]}}, generate_key())
        (other,) = ingest(get_store(), forged, now=OLD)  # its report_id, another key
        assert other.result == "rejected" and "report_id" in (other.reason or "")
    assert state(client, loaded.id) == before


def test_purge_needs_days(runner):
    result = runner.invoke(cli, ["purge"])
    assert result.exit_code == 1 and "DENIABLE_RETENTION_DAYS" in result.stderr


def old_and_new_audit_entries(store: Store) -> None:
    """Two audit entries of 10 days ago and one of now."""
    now = datetime.now(UTC)
    for moment in (OLD, OLD + timedelta(hours=1), now):
        when = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        store.append_audit(AuditEntry(when, "alice", None, "habits", "results", {}))


def actions_left(store: Store) -> list[str]:
    return [entry.time for entry in store.iter_audit()]


def test_purge_deletes_old_audit_entries(runner, app):
    with app.app_context():
        old_and_new_audit_entries(get_store())
    assert runner.invoke(cli, ["purge", "--audit-days", "11"]).stdout == (
        "purged 0 audit log entries over 11 day(s) old\n"
    )
    result = runner.invoke(cli, ["purge", "--audit-days", "7"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "purged 2 audit log entries over 7 day(s) old\n"  # no reports purged
    with app.app_context():
        assert len(actions_left(get_store())) == 1
    assert runner.invoke(cli, ["purge", "--audit-days", "0"]).exit_code == 2


def test_audit_retention_setting_purges_from_the_server_and_the_cli(tmp_path):
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "d", "AUDIT_RETENTION_DAYS": 7})
    with app.app_context():
        old_and_new_audit_entries(get_store())
    timer = app.extensions["deniable.retention"]
    assert isinstance(timer, RetentionTimer) and timer.days is None
    timer.purge()
    with app.app_context():
        assert len(actions_left(get_store())) == 1
        old_and_new_audit_entries(get_store())
    result = app.test_cli_runner().invoke(cli, ["purge"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "purged 2 audit log entries over 7 day(s) old\n"


def test_retention_setting_purges_from_the_server(tmp_path, survey_doc, report_for):
    app = create_app({"TESTING": True, "DATA_DIR": tmp_path / "d", "RETENTION_DAYS": 7})
    with app.app_context():
        store = get_store()
        store.add_admin_token(credentials.digest(TOKEN), "t", "2026-01-01T00:00:00Z")
        record, _ = create_survey(store, survey_doc, who=OPERATOR)
        survey = Survey.from_dict(record.resolved)
        ingest(store, [report_for(survey, sent_at=hour_now(OLD)) for _ in range(3)], now=OLD)
        ingest(store, [report_for(survey)])
    timer = app.extensions["deniable.retention"]
    assert isinstance(timer, RetentionTimer)
    timer.purge()
    assert state(app.test_client(), survey.id)[0] == 4
    with sqlite3.connect(Path(app.config["DATA_DIR"]) / "deniable.db") as conn:
        assert conn.execute("SELECT purged_count FROM surveys").fetchone() == (3,)
    conn.close()


def test_backup_copies_the_database_while_it_is_open(runner, client, app, loaded_survey, tmp_path):
    loaded, old = loaded_survey
    target = tmp_path / "backup.db"
    result = runner.invoke(cli, ["backup", str(target)])
    assert result.exit_code == 0, result.output
    with sqlite3.connect(target) as copy:
        assert copy.execute("SELECT count(*) FROM reports").fetchone() == (10,)
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    copy.close()
    again = runner.invoke(cli, ["backup", str(target)])
    assert again.exit_code == 1 and "exists" in again.stderr
