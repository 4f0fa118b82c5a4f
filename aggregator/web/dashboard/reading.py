"""Reading surveys: the list, a survey's page (a chart, a table and the mechanism in words per
question), a series' page, the respondent link's QR code and the report count the refresh
script polls."""

from __future__ import annotations

import io
from typing import Any

import segno
from flask import Response, current_app, render_template, request

from deniable.aggregator import access
from deniable.aggregator import surveys as actions
from deniable.aggregator.params import parse_candidates
from deniable.aggregator.stats import planning
from deniable.aggregator.stats.limits import Limits
from deniable.aggregator.stats.results import QuestionResults, SurveyResults, shown_row
from deniable.aggregator.web.charts import question_chart, scale_of, series_chart
from deniable.aggregator.web.dashboard.base import (
    attempt,
    bp,
    confidence,
    principal,
    respondent_link,
    results_options,
    status_of,
    survey_nav,
    survey_or_404,
)
from deniable.aggregator.web.db import get_store, survey_cache
from deniable.aggregator.web.languages import texts_in

#: The confidence levels a survey page offers (and the one asked, if another).
CONFIDENCES = (0.8, 0.9, 0.95, 0.99)


@bp.route("/")
def surveys() -> str:
    """Every survey the principal may see, with its status, reports received, total epsilon
    and the principal's role on it."""
    who = principal()
    store = get_store()
    roles = store.roles_of(who.account_id) if who.account_id is not None else {}
    rows = []
    for record in access.visible_surveys(store, who):
        survey = survey_cache().survey(record)
        role = "admin" if who.admin else roles.get(record.id)
        rows.append(
            {"record": record, "survey": survey, "status": status_of(record, survey), "role": role}
        )
    return render_template("surveys.html", rows=rows)


def _wide(question: Any, entry: QuestionResults, n: int, level: float) -> bool:
    """Whether n reports leave intervals about as wide as the whole range: too few to say much.

    Judged by the planner's worst-case margin at n (half the range or more), or an interval
    that already spans 90% of it."""
    width = float(question.high - question.low) if question.kind.rows == "mean" else 1.0
    spans = [high - low for low, high in entry.conf_int().values()]
    if question.kind.rows == "candidates":  # judged by its candidates' intervals alone
        return any(span >= 0.9 for span in spans)
    if not question.plain and planning.margin_for(question.randomizer, n, level) >= width / 2:
        return True
    return any(span >= 0.9 * width for span in spans)


@bp.route("/surveys/<survey_id>")
def survey(survey_id: str) -> str:
    """One survey: per question a chart, a table and the mechanism in words, in the survey's
    default language or `?lang=` another of its own (web/languages.py). Candidates asked
    (`?candidates=`) that cannot be estimated are said on the page, which still shows the
    survey's own candidates."""
    record, resolved = survey_or_404(survey_id, "results")
    who = principal()
    texts = texts_in(resolved, request.args.get("lang"))
    options = results_options()
    asked = request.args.get("candidates", "")
    doc: SurveyResults | None = None
    candidate_error = None
    if asked:
        doc, candidate_error = attempt(
            lambda: actions.results(
                get_store(), survey_id, candidates=parse_candidates(asked), who=who, **options
            )
        )
    if doc is None:
        doc = actions.results(get_store(), survey_id, who=who, **options)
    level = options["confidence"]
    questions = []
    for entry in doc.questions.values():
        question = resolved.questions[entry.id]
        text = texts.text(entry.id, question.text)
        # A text question's rows are candidates, a mean's one row: neither is an option label.
        wire = [str(o["option"]) for o in entry.options]
        labels = texts.labels(entry.id, wire) if wire == question.options else wire
        questions.append(
            {
                "entry": entry,
                "question": question,
                "text": text,
                "labels": labels,
                "chart": question_chart(
                    entry,
                    level,
                    text,
                    labels,
                    lang=None if texts.default else texts.lang,
                    direction=texts.direction,
                ),
                "words": question.randomizer.in_brief(),  # how it protects an answer
                # Judged on the reports that asked it (its own n, with skip logic).
                "wide": entry.n > 0 and _wide(question, entry, entry.n, level),
            }
        )
    return render_template(
        "survey.html",
        record=record,
        survey=resolved,
        status=status_of(record, resolved),
        n=doc.n,
        doc=doc,
        questions=questions,
        confidence=level,
        confidences=sorted({*CONFIDENCES, level}),
        simultaneous=options["simultaneous"],
        respondent_link=respondent_link(record.id),
        asked=asked,
        candidate_error=candidate_error,
        texts=texts,
        **survey_nav(survey_id),
    )


@bp.route("/series/<series_id>")
def series(series_id: str) -> str:
    """A series of waves (docs/researchers.md, "Series"): per followed question option a chart
    of the waves' estimates with their intervals, and the changes and the trend in a table.
    Readable as the API's series results are: the unknown series' page when none is seen."""
    level = confidence()
    doc = actions.series_results(
        get_store(),
        series_id,
        who=principal(),
        confidence=level,
        limits=Limits.from_config(current_app.config),
        cache=survey_cache(),
    )
    return render_template(
        "series.html", doc=doc, confidence=level, followed=_followed_charts(doc, level)
    )


def _followed_charts(doc: Any, level: float) -> list[dict[str, Any]]:
    """Per followed (question, option) of a series, in the trend's order: its chart over the
    waves, its changes and its trend entry."""
    out = []
    changes = doc.shown_changes()
    for trend in doc.trend:
        qid, option = trend["question"], trend["option"]
        points, scale = [], None
        for wave in doc["waves"]:
            for entry in wave["results"].get("questions", ()):
                if entry["id"] != qid:
                    continue
                scale = scale or scale_of(entry)
                for o in entry["options"]:
                    if str(o["option"]) == str(option):
                        # As every table shows it: the estimate within its interval and range.
                        shown = shown_row(o, int(entry.get("n") or 0), scale.low, scale.high)
                        points.append({"wave": wave["wave"], **o, **_interval_of(shown)})
        title = f"{qid} = {option}"
        out.append(
            {
                "question": qid,
                "option": option,
                "chart": series_chart(points, level, title, scale or scale_of({})),
                "points": points,
                "changes": [c for c in changes if (c["question"], c["option"]) == (qid, option)],
                "trend": trend,
            }
        )
    return out


def _interval_of(shown: dict[str, Any]) -> dict[str, Any]:
    """A shown row's estimate and interval (shown_row: each inside the other and the range)."""
    return {key: shown[key] for key in ("estimate", "ci_low", "ci_high")}


@bp.route("/surveys/<survey_id>/qr.svg")
def qr_code(survey_id: str) -> Response:
    """A printable QR code of the survey's respondent link, drawn as SVG on the server."""
    survey_or_404(survey_id, "view")
    buffer = io.BytesIO()
    segno.make(respondent_link(survey_id), error="m").save(
        buffer, kind="svg", scale=8, border=4, title=f"Answer survey {survey_id}"
    )
    return Response(
        buffer.getvalue(),
        mimetype="image/svg+xml",
        headers={"Content-Disposition": f'inline; filename="{survey_id}-qr.svg"'},
    )


@bp.route("/surveys/<survey_id>/count.json")
def count(survey_id: str) -> dict[str, Any]:
    """The number of reports received, for the refresh script."""
    record, _ = survey_or_404(survey_id, "view")
    return {"survey": survey_id, "n": record.report_count}
