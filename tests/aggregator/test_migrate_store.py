"""`migrate-store`: an SQLite deployment copied into PostgreSQL answers exactly as before."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from deniable.aggregator.access import OPERATOR
from deniable.aggregator.credentials import digest
from deniable.aggregator.stats.analyze import tally
from deniable.aggregator.store import AuditEntry, StoreError
from deniable.aggregator.store.migrate import migrate
from deniable.aggregator.store.sqlite import SQLiteStore
from deniable.aggregator.surveys import create_survey
from tests.aggregator.conftest import SURVEY_DOC
from tests.conftest import AGGREGATOR

pytest.importorskip("psycopg")
from deniable.aggregator.store.postgres import PostgresStore, close_pools

pytestmark = pytest.mark.slow


def cli(*args: str, data_dir: Path, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DENIABLE_DATA_DIR": str(data_dir)}
    env.pop("DENIABLE_DATABASE_URL", None)
    if url:
        env["DENIABLE_DATABASE_URL"] = url
    return subprocess.run(
        [str(AGGREGATOR), *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_the_demo_deployment_round_trips_with_identical_results(postgres_cluster, tmp_path):
    data = tmp_path / "data"
    demo = cli("demo", "--no-serve", "--port", "0", "--respondents", "300", data_dir=data)
    assert demo.returncode == 0, demo.stderr
    survey = next(
        line.split()[1] for line in demo.stdout.splitlines() if line.startswith("survey:")
    )
    assert cli("close", survey, data_dir=data).returncode == 0  # a closed survey stays closed
    source = SQLiteStore.in_data_dir(data)
    create_survey(source, {**SURVEY_DOC, "id": "p", "enrollment": "invite"}, who=OPERATOR)
    source.add_invitations("p", ["code-1", "code-2"], "2026-01-01T00:00:00Z")
    assert source.enroll("p", "key-1", "code-1") == "enrolled"
    source.close()
    url = postgres_cluster.database("migrate")

    copied = cli("migrate-store", "--to", url, data_dir=data)
    assert copied.returncode == 0, copied.stderr
    assert f"{survey}: n=300; every tally matches" in copied.stdout
    assert "900 reports" in copied.stdout  # three demo surveys (one from the XLSForm)
    # The demo's accounts, tokens, roles and audit log came along (test below for the detail).
    assert all(f" {table}" in copied.stdout for table in ("accounts", "tokens", "grants", "audit"))

    for form in ("--json", "--csv"):
        before = cli("results", survey, form, data_dir=data)
        after = cli("results", survey, form, data_dir=data, url=url)
        assert before.returncode == after.returncode == 0, after.stderr
        assert after.stdout == before.stdout

    target = PostgresStore(url)
    assert target.get_survey(survey).closed
    assert target.is_enrolled("p", "key-1") and not target.is_enrolled("p", "key-2")
    assert target.enroll("p", "key-2", "code-1") == "used-code"
    assert target.enroll("p", "key-2", "code-2") == "enrolled"
    close_pools()

    again = cli("migrate-store", "--to", url, data_dir=data)  # never into a database in use
    assert again.returncode == 1
    assert "already holds surveys" in again.stderr and "\n" not in again.stderr.strip()


def test_a_missing_source_or_bad_target_is_one_line(postgres_cluster, tmp_path):
    missing = cli("migrate-store", "--to", postgres_cluster.database(), data_dir=tmp_path / "none")
    assert missing.returncode == 1 and "no SQLite database" in missing.stderr
    data = tmp_path / "data"
    assert cli("create-token", data_dir=data).returncode == 0
    bad = cli("migrate-store", "--to", "postgresql://127.0.0.1:1/x", data_dir=data)
    assert bad.returncode == 1 and "cannot connect" in bad.stderr


def test_accounts_tokens_roles_and_the_audit_log_are_copied(postgres_cluster, tmp_path):
    t0, t1 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
    source = SQLiteStore.in_data_dir(tmp_path / "data")
    source.migrate()
    ops = source.add_admin_token(digest("ops"), "ops", t0)
    bob = source.create_account("bob", False, t0)
    amy = source.create_account("amy", False, t0)
    scoped = source.add_token(
        digest("bob"), bob.id, "laptop", t0, expires_at=t1, read_only=True, surveys=["p"]
    )
    source.add_token(digest("bob-old"), bob.id, "old", t0)
    source.revoke_token(digest("bob-old")[:12], t1)
    create_survey(source, {**SURVEY_DOC, "id": "p"}, who=OPERATOR)
    source.grant("p", bob.id, "owner", t0)
    source.grant("p", amy.id, "analyst", t1)
    entries = [
        AuditEntry(t0, "bob", scoped.id, "p", "results", {"confidence": 0.9, "text": "é"}),
        AuditEntry(t1, "ops", ops.id, None, "token.revoke", {"token": "0123456789ab"}),
    ]
    for entry in entries:
        source.append_audit(entry)
    tokens, accounts, log = source.list_tokens(), source.list_accounts(), list(source.iter_audit())
    assert log[-2:] == entries  # after the service's own entry for the survey's creation
    source.close()
    url = postgres_cluster.database("accounts")

    copied = migrate(tmp_path / "data", url, tally)
    assert {t: copied.rows[t] for t in ("accounts", "tokens", "grants", "audit")} == {
        "accounts": 3,
        "tokens": 3,
        "grants": 2,
        "audit": len(log),
    }
    target = PostgresStore(url)
    try:
        assert target.list_accounts() == accounts and target.list_tokens() == tokens
        assert target.token_by_hash(digest("bob")) == scoped
        assert target.roles_of(bob.id) == {"p": "owner"} and target.roles_of(amy.id) == {
            "p": "analyst"
        }
        assert list(target.iter_audit()) == log
        # The sequences moved past the copied numbers: new rows take new ones, in order.
        carol = target.create_account("carol", False, t1)
        assert carol.id > max(a.id for a in accounts)
        target.append_audit(AuditEntry(t0, "carol", None, None, "create", {}))
        assert [e.account for e in target.iter_audit()][-3:] == ["bob", "ops", "carol"]
        with pytest.raises(StoreError, match="already holds"):
            migrate(tmp_path / "data", url, tally)
    finally:
        close_pools()
