"""Dashboard sessions over real HTTP, on both stores: a cookie copied before logout, and one
opened before `revoke-token`, get the login page afterwards."""

from __future__ import annotations

import re
from typing import Any

import requests

SURVEY: dict[str, Any] = {
    "id": "sessions",
    "title": "Sessions survey",
    "questions": [{"id": "q", "text": "Q?", "type": "binary", "epsilon": 1.0}],
}
PAGE = "/surveys/sessions"


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "no CSRF token on the page"
    return found.group(1)


def _logged_in_browser(url: str, token: str) -> requests.Session:
    browser = requests.Session()
    csrf = _csrf(browser.get(f"{url}/login", timeout=10).text)
    response = browser.post(
        f"{url}/login", data={"token": token, "csrf_token": csrf}, allow_redirects=False, timeout=10
    )
    assert response.status_code == 302, response.text
    return browser


def _copy_of(browser: requests.Session) -> requests.Session:
    copy = requests.Session()
    copy.cookies.set("session", browser.cookies["session"])
    return copy


def _sees_the_survey(browser: requests.Session, url: str) -> bool:
    response = browser.get(f"{url}{PAGE}", allow_redirects=False, timeout=10)
    if response.status_code == 200 and SURVEY["title"] in response.text:
        return True
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    page = browser.get(f"{url}{PAGE}", timeout=10).text
    assert 'name="token"' in page and SURVEY["title"] not in page
    return False


def test_a_cookie_copied_before_logout_gets_the_login_page(live_server: Any) -> None:
    url = live_server.url
    live_server.create_survey(SURVEY)
    browser = _logged_in_browser(url, live_server.token)
    copy = _copy_of(browser)
    assert _sees_the_survey(copy, url)
    csrf = _csrf(browser.get(f"{url}/", timeout=10).text)
    logout = browser.post(
        f"{url}/logout", data={"csrf_token": csrf}, allow_redirects=False, timeout=10
    )
    assert logout.status_code == 302
    assert not _sees_the_survey(copy, url)
    assert not _sees_the_survey(browser, url)


def test_a_session_opened_before_revocation_gets_the_login_page(live_server: Any) -> None:
    url = live_server.url
    live_server.create_survey(SURVEY)
    other = live_server.cli("create-token", "--name", "other").stdout.strip()
    browser = _logged_in_browser(url, live_server.token)
    copy = _copy_of(browser)
    stays = _logged_in_browser(url, other)
    assert _sees_the_survey(copy, url) and _sees_the_survey(stays, url)
    revoked = live_server.cli("revoke-token", "tests")
    assert revoked.stdout.strip() == "revoked 1 token(s) named 'tests'"
    assert not _sees_the_survey(browser, url)
    assert not _sees_the_survey(copy, url)
    assert _sees_the_survey(stays, url)
