"""Two aggregators (gunicorn, 2 workers each) on different ports, one PostgreSQL database.

Four client processes post at once, two to each server: their own reports, reports every
process sends to both servers, and pairs signed by one key whose two reports go to different
servers at the same time. n and every tally, read from either server, equal a recount of the
stored reports; no report is accepted twice and every key counts once.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import requests

from deniable.shared import Survey
from tests.conftest import free_port
from tests.e2e import load_support as load
from tests.e2e.test_gunicorn import plans, prepare

pytestmark = pytest.mark.slow


def test_two_servers_one_database_count_exactly(postgres_cluster, tmp_path: Path) -> None:
    database_url = postgres_cluster.database("two")
    token = prepare(tmp_path / "data", tmp_path, database_url)
    urls = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
    servers = [
        load.gunicorn(
            tmp_path / f"data-{i}",
            int(url.rsplit(":", 1)[1]),
            workers=2,
            DENIABLE_DATABASE_URL=database_url,
        )
        for i, url in enumerate(urls)
    ]
    try:
        for url, server in zip(urls, servers, strict=True):
            load.wait_healthy(url, server)
        published = requests.get(f"{urls[0]}/api/v1/surveys/{load.SURVEY['id']}", timeout=10)
        survey = Survey.from_dict(published.json()["survey"])
        steps, ids = plans(survey)
        posters = []
        for i, plan in enumerate(
            steps
        ):  # processes 0 and 2 post to one server, 1 and 3 to the other
            (tmp_path / f"p{i}").mkdir()
            posters += load.start_posters(urls[i % 2], [plan], tmp_path / f"p{i}")
        answers = load.collect(posters, timeout=120)
        results = [pair for process in answers for pair in process]
        assert {result for _, result in results} <= {"accepted", "duplicate", "rejected"}
        accepted = Counter(rid for rid, result in results if result == "accepted")
        assert max(accepted.values()) == 1  # no report accepted twice, by either server
        assert all(accepted[rid] == 1 for rid in ids["own"] + ids["shared"])
        for pair in ids["pairs"]:
            first, second = pair.split()
            assert accepted[first] + accepted[second] == 1  # one report per key
        for url in urls:
            n, stored = load.assert_tallies_match_export(url, token, survey)
            assert n == sum(accepted.values()) == len(stored)
            assert stored == set(accepted)
        assert load.served_results(urls[0], token, survey.id) == load.served_results(
            urls[1], token, survey.id
        )
    finally:
        errors = [load.stop(server) for server in servers]
    for err in errors:
        assert "Traceback" not in err, err
