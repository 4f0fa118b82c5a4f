"""Two real aggregator processes on one PostgreSQL database (docs/operations.md, "Growing past
one machine"): what is done through one is honoured by the other on its next request (a
survey closed, a token revoked, a role granted and taken away, a dashboard logout), and with
DENIABLE_RATE_LIMIT_STORAGE on one Redis a client over the rate limit across both is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import requests

from deniable.aggregator.credentials import digest, token_id
from deniable.shared import Survey, make_report
from deniable.shared.signing import generate_key
from tests.conftest import LiveServer
from tests.e2e.test_sessions_http import _copy_of, _csrf, _logged_in_browser, _sees_the_survey

SURVEY: dict[str, Any] = {
    "id": "sessions",
    "title": "Sessions survey",
    "questions": [{"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0}],
}
#: Signs both processes' dashboard cookies: a session opened on one is read by the other.
SECRET = "the-same-secret-key-on-every-machine-0123456789"


@pytest.fixture
def backend() -> str:
    """Several aggregators share one database only on PostgreSQL."""
    return "postgres"


def _two(
    factory: Callable[..., LiveServer], database_url: str, **env: str
) -> tuple[LiveServer, LiveServer]:
    """Two aggregator processes on one database, with one secret key (and `env`)."""
    shared = {"DENIABLE_DATABASE_URL": database_url, "DENIABLE_SECRET_KEY": SECRET, **env}
    return factory(shared), factory(shared)


def _post(server: LiveServer, survey: Survey, n: int = 1) -> requests.Response:
    reports = [make_report(survey, {"q": "yes"}, generate_key()) for _ in range(n)]
    body: Any = reports[0] if n == 1 else {"reports": reports}
    return requests.post(f"{server.url}/api/v1/reports", json=body, timeout=10)


def _api(server: LiveServer, token: str, method: str, path: str, **kw: Any) -> requests.Response:
    return requests.request(
        method,
        f"{server.url}{path}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
        **kw,
    )


def test_a_survey_closed_through_one_refuses_reports_on_the_other(
    live_server_factory: Callable[..., LiveServer], database_url: str
) -> None:
    first, second = _two(live_server_factory, database_url)
    survey = Survey.from_dict(first.create_survey(SURVEY)["survey"])
    assert _post(second, survey).status_code == 201  # the second has the survey, open
    closed = _api(first, first.token, "POST", f"/api/v1/surveys/{survey.id}/close")
    assert closed.status_code == 200, closed.text
    refused = _post(second, survey)
    assert refused.status_code == 409 and "closed" in refused.json()["detail"]
    assert second.results(survey.id)["n"] == 1
    listed = _api(second, second.token, "GET", "/api/v1/surveys").json()["surveys"]
    assert [s["closed"] for s in listed if s["id"] == survey.id] == [True]


def test_a_token_revoked_through_one_is_refused_by_the_other(
    live_server_factory: Callable[..., LiveServer], database_url: str
) -> None:
    first, second = _two(live_server_factory, database_url)
    first.cli("account", "create", "bob")
    bob = first.cli("token", "create", "bob").stdout.strip()
    assert _api(second, bob, "GET", "/api/v1/surveys").status_code == 200
    admin = _logged_in_browser(first.url, first.token)
    csrf = _csrf(admin.get(f"{first.url}/accounts", timeout=10).text)
    revoked = admin.post(
        f"{first.url}/accounts/tokens/revoke",
        data={"token_id": token_id(digest(bob)), "csrf_token": csrf},
        allow_redirects=False,
        timeout=10,
    )
    assert revoked.status_code == 302, revoked.text
    refused = _api(second, bob, "GET", "/api/v1/surveys")
    assert refused.status_code == 401 and "revoked" in refused.text


def test_a_role_granted_and_taken_through_one_is_honoured_by_the_other(
    live_server_factory: Callable[..., LiveServer], database_url: str
) -> None:
    first, second = _two(live_server_factory, database_url)
    survey_id = first.create_survey(SURVEY)["survey"]["id"]
    first.cli("account", "create", "bob")
    bob = first.cli("token", "create", "bob").stdout.strip()
    results = f"/api/v1/surveys/{survey_id}/results"
    assert _api(second, bob, "GET", results).status_code == 404
    people = f"/api/v1/surveys/{survey_id}/people/bob"
    granted = _api(first, first.token, "PUT", people, json={"role": "analyst"})
    assert granted.status_code == 200, granted.text
    assert _api(second, bob, "GET", results).status_code == 200
    assert _api(second, bob, "POST", f"/api/v1/surveys/{survey_id}/close").status_code == 403
    assert _api(first, first.token, "DELETE", people).status_code == 204
    assert _api(second, bob, "GET", results).status_code == 404


def test_a_logout_through_one_ends_the_session_on_the_other(
    live_server_factory: Callable[..., LiveServer], database_url: str
) -> None:
    first, second = _two(live_server_factory, database_url)
    first.create_survey(SURVEY)
    browser = _logged_in_browser(first.url, first.token)
    copy = _copy_of(browser)
    assert _sees_the_survey(copy, second.url)  # one session, read by both processes
    csrf = _csrf(browser.get(f"{first.url}/", timeout=10).text)
    logout = browser.post(
        f"{first.url}/logout", data={"csrf_token": csrf}, allow_redirects=False, timeout=10
    )
    assert logout.status_code == 302
    assert not _sees_the_survey(copy, second.url)


@pytest.mark.parametrize("shared", [True, False], ids=["redis", "memory"])
def test_a_client_over_the_rate_limit_across_both_is_refused_when_redis_counts(
    live_server_factory: Callable[..., LiveServer],
    database_url: str,
    request: pytest.FixtureRequest,
    shared: bool,
) -> None:
    """With one Redis the two processes count together; with each its memory (the control),
    the second process still takes what the first refused."""
    storage = request.getfixturevalue("redis_server").url if shared else "memory://"
    first, second = _two(
        live_server_factory,
        database_url,
        DENIABLE_RATE_LIMIT="3/minute",
        DENIABLE_RATE_LIMIT_STORAGE=storage,
    )
    survey = Survey.from_dict(first.create_survey(SURVEY)["survey"])
    assert _post(first, survey, 2).status_code == 200  # a batch of 2 counts 2
    assert _post(second, survey).status_code == 201  # 3: the limit, reached across both
    over = [_post(first, survey), _post(second, survey)]
    if shared:
        assert [r.status_code for r in over] == [429, 429]
        assert all(int(r.headers["Retry-After"]) >= 1 for r in over)
        assert first.results(survey.id)["n"] == 3
    else:
        assert [r.status_code for r in over] == [201, 201]  # each process counts its own
