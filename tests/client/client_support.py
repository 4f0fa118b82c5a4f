"""Helpers for the client tests: a survey using every mechanism, researcher calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import requests


def survey_doc(survey_id: str, *, enrollment: str = "open") -> dict[str, Any]:
    """A survey with every mechanism: rr, two fair coins, grr (auto) and oue."""
    return {
        "id": survey_id,
        "title": f"Client test {survey_id}",
        "enrollment": enrollment,
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
                "mechanism": "grr",
            },
            {
                "id": "fruit",
                "text": "Favourite fruit?",
                "type": "categorical",
                "options": ["apple", "pear", "plum", "fig", "kiwi", "lime"],
                "epsilon": 0.5,
                "mechanism": "oue",
            },
        ],
    }


TRUTH = {"smokes": "yes", "cannabis": "no", "party": "B", "fruit": "fig"}


def researcher(live_server: Any, method: str, path: str, **kwargs: Any) -> requests.Response:
    """A researcher request to the live server (bearer token)."""
    headers = {"Authorization": f"Bearer {live_server.token}"}
    return requests.request(
        method, f"{live_server.url}{path}", headers=headers, timeout=30, **kwargs
    )


def stored_reports(live_server: Any, survey_id: str) -> list[dict[str, Any]]:
    """Every report the live server stored for a survey (reports.jsonl)."""
    response = researcher(live_server, "GET", f"/api/v1/surveys/{survey_id}/reports.jsonl")
    response.raise_for_status()
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]


class PostsDrop(requests.Session):
    """A network on which every POST fails (the link drops after the survey was fetched)."""

    def __init__(self, on_post: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.on_post = on_post
        self.posts = 0

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if str(method).upper() == "POST":
            self.posts += 1
            if self.on_post is not None:
                self.on_post()
            raise requests.ConnectionError("the network dropped")
        return super().request(method, url, *args, **kwargs)


class CountsPosts(requests.Session):
    """The real network, counting the POSTs that go out."""

    def __init__(self) -> None:
        super().__init__()
        self.posts = 0

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self.posts += str(method).upper() == "POST"
        return super().request(method, url, *args, **kwargs)
