"""A client process of the load tests: `python poster.py URL PLAN.json` posts the plan's steps.

A step is a report (posted alone) or a list of reports (posted as a batch). Prints a JSON list
of [report_id, result] in the order sent; "noanswer" when the server gave no answer.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import requests


def post(session: requests.Session, url: str, step: Any) -> list[list[str]]:
    """Post one step; a [report_id, result] pair per report in it."""
    batch = isinstance(step, list)
    body = {"reports": step} if batch else step
    ids = [r["report_id"] for r in step] if batch else [step["report_id"]]
    try:
        response = session.post(f"{url}/api/v1/reports", json=body, timeout=20)
        answer = response.json()
    except (requests.RequestException, ValueError):
        return [[rid, "noanswer"] for rid in ids]
    if response.status_code >= 500:
        return [[rid, f"status-{response.status_code}"] for rid in ids]
    results = answer["results"] if batch else [answer]
    return [[rid, r["result"]] for rid, r in zip(ids, results, strict=True)]


def main() -> None:
    """Post every step of the plan and print the answers."""
    url, plan_path = sys.argv[1], sys.argv[2]
    with open(plan_path, encoding="utf-8") as handle:
        plan = json.load(handle)
    answers: list[list[str]] = []
    with requests.Session() as session:
        for step in plan:
            answers.extend(post(session, url, step))
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
