"""`migrate-store`: an SQLite deployment copied into PostgreSQL answers exactly as before."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

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
    create_survey(source, {**SURVEY_DOC, "id": "p", "enrollment": "invite"})
    source.add_invitations("p", ["code-1", "code-2"], "2026-01-01T00:00:00Z")
    assert source.enroll("p", "key-1", "code-1") == "enrolled"
    source.close()
    url = postgres_cluster.database("migrate")

    copied = cli("migrate-store", "--to", url, data_dir=data)
    assert copied.returncode == 0, copied.stderr
    assert f"{survey}: n=300; every tally matches" in copied.stdout
    assert "600 reports" in copied.stdout and "1 tokens" in copied.stdout  # two demo surveys

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
