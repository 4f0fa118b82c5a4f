"""Charts drawn on the server as inline SVG: no script, no external file, readable without colour.

Per option a bar for the unbiased estimate with its confidence-interval whisker, and a thinner
bar beside it for the consistent distribution (`share`). The axis runs from 0 to 1; an estimate
outside it is drawn at the edge and said in the description. Every chart carries a <title> and
a <desc> that spell out the numbers for screen readers.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup, escape

WIDTH = 480
LABEL_W = 96
RIGHT = 20
TOP = 12
ROW = 46
BOTTOM = 30
TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
MAX_LABEL = 12

_ids = itertools.count(1)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def _x(value: float) -> float:
    plot = WIDTH - LABEL_W - RIGHT
    return LABEL_W + plot * min(max(value, 0.0), 1.0)


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def describe(question: Mapping[str, Any], confidence: float) -> str:
    """The chart's numbers in words, one sentence per option."""
    parts = []
    for o in question["options"]:
        if o["estimate"] is None:
            parts.append(f"{o['option']}: no estimate yet")
            continue
        note = ""
        if o["estimate"] < 0 or o["estimate"] > 1:
            note = " (outside 0 to 1 by chance; the share is the consistent value)"
        parts.append(
            f"{o['option']}: estimate {_pct(o['estimate'])}{note}, {confidence:.0%} interval "
            f"{_pct(o['ci_low'])} to {_pct(o['ci_high'])}, share {_pct(o['share'])}"
        )
    return "; ".join(parts) + "."


def question_chart(question: Mapping[str, Any], confidence: float, title: str = "") -> Markup:
    """An inline <svg> chart of one question's results entry (DESIGN's results JSON)."""
    uid = f"chart-{next(_ids)}"
    options = question["options"]
    height = TOP + ROW * len(options) + BOTTOM
    plot_bottom = TOP + ROW * len(options)
    name = title or question["id"]
    out = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
        f'aria-labelledby="{uid}-t {uid}-d">',
        f'<title id="{uid}-t">{escape(name)}: estimates with {confidence:.0%} intervals</title>',
        f'<desc id="{uid}-d">{escape(describe(question, confidence))}</desc>',
    ]
    for tick in TICKS:
        x = _x(tick)
        out.append(
            f'<line x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{plot_bottom}" class="grid"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{plot_bottom + 18}" text-anchor="middle" class="tick">{tick:.0%}</text>'
        )
    for i, o in enumerate(options):
        y = TOP + ROW * i
        label = str(o["option"])
        out.append(
            f'<text x="{LABEL_W - 8}" y="{y + 20}" text-anchor="end" class="label">'
            f"<title>{escape(label)}</title>{escape(_short(label))}</text>"
        )
        est = o["estimate"]
        if est is not None:
            out.append(_bar(label, "estimate", est, y + 6, 18, "bar-est"))
            lo, hi, mid = _x(o["ci_low"]), _x(o["ci_high"]), y + 15
            out.append(
                f'<g class="whisker"><line x1="{lo:.1f}" y1="{mid}" x2="{hi:.1f}" y2="{mid}"/>'
                f'<line x1="{lo:.1f}" y1="{mid - 7}" x2="{lo:.1f}" y2="{mid + 7}"/>'
                f'<line x1="{hi:.1f}" y1="{mid - 7}" x2="{hi:.1f}" y2="{mid + 7}"/></g>'
            )
        if o["share"] is not None:
            out.append(_bar(label, "share", o["share"], y + 28, 10, "bar-share"))
    out.append(
        f'<line x1="{LABEL_W}" y1="{TOP - 4}" x2="{LABEL_W}" y2="{plot_bottom}" class="axis"/>'
    )
    out.append("</svg>")
    return Markup("".join(out))


def _bar(label: str, what: str, value: float, y: float, height: int, css: str) -> str:
    """One horizontal bar from 0 to `value`, with its value as a tooltip."""
    x0, x1 = _x(0.0), _x(value)
    return (
        f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 0):.1f}" height="{height}" class="{css}">'
        f"<title>{escape(label)}: {what} {_pct(value)}</title></rect>"
    )
