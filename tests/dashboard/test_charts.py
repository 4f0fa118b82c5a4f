"""The server-drawn SVG chart."""

from __future__ import annotations

from deniable.aggregator.web.charts import question_chart


def entry(estimate: float, low: float, high: float) -> dict:
    return {
        "id": "q",
        "options": [
            {
                "option": "no",
                "estimate": 1 - estimate,
                "ci_low": 1 - high,
                "ci_high": 1 - low,
                "share": 1 - estimate,
            },
            {
                "option": "<yes>",
                "estimate": estimate,
                "ci_low": low,
                "ci_high": high,
                "share": estimate,
            },
        ],
    }


def test_chart_is_accessible_svg_with_escaped_labels() -> None:
    svg = str(question_chart(entry(0.3, 0.25, 0.35), 0.95, "Do <you> smoke?"))
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert 'role="img"' in svg and "<title" in svg and "<desc" in svg
    assert "&lt;yes&gt;" in svg and "<yes>" not in svg
    assert "&lt;you&gt;" in svg
    assert "share 30.0%; unbiased estimate 30.0%" in svg and "interval 25.0% to 35.0%" in svg
    assert "http" not in svg


def test_estimates_outside_zero_one_are_drawn_at_the_edge_and_said() -> None:
    svg = str(question_chart(entry(-0.05, 0.0, 0.04), 0.95))
    assert "unbiased estimate fell below 0.0% by chance" in svg
    assert "-5.0%" not in svg and "105.0%" not in svg  # every number said is in [0, 100%]
    assert "unbiased estimate fell above 100.0% by chance" in svg  # no's 1.05
    assert 'width="-' not in svg


def test_missing_estimate() -> None:
    data = entry(0.3, 0.0, 1.0)
    for o in data["options"]:
        o["estimate"] = o["share"] = None
    svg = str(question_chart(data, 0.95))
    assert "no estimate yet" in svg
