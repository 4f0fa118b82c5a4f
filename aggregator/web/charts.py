"""Charts drawn on the server as inline SVG: no script, no external file, readable without colour.

Per option a bar for the unbiased estimate with its confidence-interval whisker, and a thinner
bar beside it for the consistent distribution (`share`). The axis runs from 0 to 1 (an integer
question's mean: from its min to its max, with no share bar; a multi question's options: no
share bar either, each is its own yes/no); an estimate outside it is drawn at the edge and said
in the description. Every chart carries a <title> and
a <desc> that spell out the numbers for screen readers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from deniable.shared.questions import QUESTION_TYPES

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


@dataclass(frozen=True)
class Scale:
    """The chart's axis: from `low` to `high`, values written by `text`."""

    low: float = 0.0
    high: float = 1.0
    text: Callable[[float | None], str] = _pct

    def x(self, value: float) -> float:
        plot = WIDTH - LABEL_W - RIGHT
        share = (value - self.low) / (self.high - self.low)
        return LABEL_W + plot * min(max(share, 0.0), 1.0)

    def ticks(self) -> list[float]:
        return [self.low + (self.high - self.low) * t for t in TICKS]


SHARES = Scale()


def scale_of(question: Mapping[str, Any]) -> Scale:
    """0 to 1 for shares; an integer question's own min to max for its mean."""
    kind = QUESTION_TYPES.get(question.get("type"))  # type: ignore[arg-type]
    if kind is not None and kind.rows == "mean":
        return Scale(float(question["min"]), float(question["max"]), _number)
    return SHARES


def _number(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def describe(question: Mapping[str, Any], confidence: float) -> str:
    """The chart's numbers in words, one sentence per option."""
    parts = []
    scale = scale_of(question)
    text = scale.text
    for o in question["options"]:
        if o["estimate"] is None:
            parts.append(f"{o['option']}: no estimate yet")
            continue
        note = ""
        if o["estimate"] < scale.low or o["estimate"] > scale.high:
            note = (
                " (outside 0 to 1 by chance; the share is the consistent value)"
                if scale is SHARES
                else f" (outside {text(scale.low)} to {text(scale.high)} by chance)"
            )
        share = "" if not _has_share(question) else f", share {text(o['share'])}"
        parts.append(
            f"{o['option']}: estimate {text(o['estimate'])}{note}, {confidence:.0%} interval "
            f"{text(o['ci_low'])} to {text(o['ci_high'])}{share}"
        )
    return "; ".join(parts) + "."


def question_chart(question: Mapping[str, Any], confidence: float, title: str = "") -> Markup:
    """An inline <svg> chart of one question's results: a QuestionResults (stats/results.py),
    or a mapping of the same shape."""
    uid = f"chart-{next(_ids)}"
    scale = scale_of(question)
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
    for tick in scale.ticks():
        x = scale.x(tick)
        label = f"{tick:.0%}" if scale is SHARES else f"{tick:.4g}"
        out.append(
            f'<line x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{plot_bottom}" class="grid"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{plot_bottom + 18}" text-anchor="middle" class="tick">{label}</text>'
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
            out.append(_bar(label, "estimate", est, y + 6, 18, "bar-est", scale))
            lo, hi, mid = scale.x(o["ci_low"]), scale.x(o["ci_high"]), y + 15
            out.append(
                f'<g class="whisker"><line x1="{lo:.1f}" y1="{mid}" x2="{hi:.1f}" y2="{mid}"/>'
                f'<line x1="{lo:.1f}" y1="{mid - 7}" x2="{lo:.1f}" y2="{mid + 7}"/>'
                f'<line x1="{hi:.1f}" y1="{mid - 7}" x2="{hi:.1f}" y2="{mid + 7}"/></g>'
            )
        if o["share"] is not None and _has_share(question):
            out.append(_bar(label, "share", o["share"], y + 28, 10, "bar-share", scale))
    out.append(
        f'<line x1="{LABEL_W}" y1="{TOP - 4}" x2="{LABEL_W}" y2="{plot_bottom}" class="axis"/>'
    )
    out.append("</svg>")
    return Markup("".join(out))


def _has_share(question: Mapping[str, Any]) -> bool:
    """Whether `share` is a distribution worth its own bar (not for a mean or a multi question,
    where it is the estimate clipped)."""
    kind = QUESTION_TYPES.get(question.get("type"))  # type: ignore[arg-type]
    return kind is None or kind.distribution


def _bar(
    label: str, what: str, value: float, y: float, height: int, css: str, scale: Scale = SHARES
) -> str:
    """One horizontal bar from the axis's start to `value`, with its value as a tooltip."""
    x0, x1 = scale.x(scale.low), scale.x(value)
    return (
        f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 0):.1f}" height="{height}" class="{css}">'
        f"<title>{escape(label)}: {what} {scale.text(value)}</title></rect>"
    )
