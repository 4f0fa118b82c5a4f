"""Charts drawn on the server as inline SVG: no script, no external file, readable without colour.

Per option, the numbers of its table row (QuestionResults.shown(): docs/researchers.md,
"Reading the results"): a bar for the share, the headline (the consistent distribution; for a
select-all option or a mean, the estimate within its range), the whisker of the unbiased
estimate's confidence interval, and a diamond at the unbiased estimate, so that what is drawn
never leaves its interval nor the axis. The axis runs from 0 to 1 (an integer question's mean:
from its min to its max). Option labels are HTML inside the SVG (foreignObject) so that they
wrap, never clip; each row is as tall as its label needs. Every chart carries a <title> and a
<desc> that spell out the numbers for screen readers. The rows keep wire order in every
language (only their names change), and a question with a skip-logic condition says so.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from deniable.aggregator.stats.results import QuestionResults, shown_row

WIDTH = 480
LABEL_W = 150
RIGHT = 20
TOP = 12
ROW = 46
BOTTOM = 30
TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Characters of a label per line, counted low (the box holds about 18 at its font) so that
#: a line never overflows it; a label's row grows a line at a time.
LABEL_LINE = 14
LINE_HEIGHT = 15

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


def _entry(question: Mapping[str, Any]) -> QuestionResults:
    return question if isinstance(question, QuestionResults) else QuestionResults(question)


def scale_of(question: Mapping[str, Any]) -> Scale:
    """0 to 1 for shares; an integer question's own min to max for its mean."""
    if "min" in question and "max" in question:
        return Scale(float(question["min"]), float(question["max"]), _number)
    return SHARES


def _number(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def _rows(question: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The shown numbers of each row (shown_row), whatever mapping the chart was given."""
    scale = scale_of(question)
    n = int(question.get("n") or 0)
    return [shown_row(o, n, scale.low, scale.high) for o in question["options"]]


def describe(
    question: Mapping[str, Any], confidence: float, labels: Sequence[str] | None = None
) -> str:
    """The chart's numbers in words, one sentence per option (named by `labels`, in option
    order, when given: the options in the page's language): the numbers its table shows; a
    question with a condition says that its estimates are for the reports that asked it."""
    parts = []
    scale = scale_of(question)
    text = scale.text
    names = _names(question, labels)
    edge = {"below": text(scale.low), "above": text(scale.high)}
    for name, o in zip(names, _rows(question), strict=True):
        if o["estimate"] is None:
            parts.append(f"{name}: no estimate yet")
            continue
        note = ""
        if o["clipped"]:
            note = f" (the unbiased estimate fell {o['clipped']} {edge[o['clipped']]} by chance)"
        parts.append(
            f"{name}: share {text(o['share'])}; unbiased estimate {text(o['estimate'])}{note}, "
            f"{confidence:.0%} interval {text(o['ci_low'])} to {text(o['ci_high'])}"
        )
    asked = ""
    if question.get("relevant"):
        asked = (
            f"Asked only if {question['relevant']}: estimates for the {question['n']} "
            "reports that asked it. "
        )
    return asked + "; ".join(parts) + "."


def _names(question: Mapping[str, Any], labels: Sequence[str] | None) -> list[str]:
    """What each row is called on the chart: `labels` (one per row, in wire order) or the
    rows' own option labels."""
    rows = question["options"]
    if labels is not None and len(labels) == len(rows):
        return [str(label) for label in labels]
    return [str(o["option"]) for o in rows]


def _label_lines(label: str) -> int:
    """The lines a label takes when wrapped at LABEL_LINE characters a line (a word longer
    than a line breaks anywhere, as the label's CSS lets it)."""
    lines, used = 1, 0
    for word in label.split():
        size = len(word)
        if used and used + 1 + size <= LABEL_LINE:
            used += 1 + size
            continue
        if used:
            lines += 1
        lines += (size - 1) // LABEL_LINE
        used = size - (size - 1) // LABEL_LINE * LABEL_LINE
    return lines


def _row_height(label: str) -> int:
    """A row tall enough for its label's lines (at least ROW)."""
    return max(ROW, _label_lines(label) * LINE_HEIGHT + 12)


def question_chart(
    question: Mapping[str, Any],
    confidence: float,
    title: str = "",
    labels: Sequence[str] | None = None,
    *,
    lang: str | None = None,
    direction: str | None = None,
) -> Markup:
    """An inline <svg> chart of one question's results: a QuestionResults (stats/results.py),
    or a mapping of the same shape. `labels` names the rows in another language (`lang`,
    `direction` for their text); the rows stay in wire order."""
    uid = f"chart-{next(_ids)}"
    scale = scale_of(question)
    names = _names(question, labels)
    heights = [_row_height(label) for label in names]
    plot_bottom = TOP + sum(heights)
    height = plot_bottom + BOTTOM
    name = title or question["id"]
    out = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
        f'aria-labelledby="{uid}-t {uid}-d">',
        f'<title id="{uid}-t">{escape(name)}: shares with the {confidence:.0%} intervals of '
        "the unbiased estimates</title>",
        f'<desc id="{uid}-d">{escape(describe(question, confidence, labels))}</desc>',
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
    said = Markup(' dir="auto"')
    if lang:
        said = Markup(' lang="{}" dir="{}"').format(lang, direction or "auto")
    y = TOP
    for label, o, row_height in zip(names, _rows(question), heights, strict=True):
        out.append(
            f'<foreignObject x="0" y="{y}" width="{LABEL_W - 8}" height="{row_height}" '
            f'class="label-box"><div class="chart-label"'
            f"{said}><span>{escape(label)}</span></div></foreignObject>"
        )
        mid = y + row_height / 2
        if o["share"] is not None:
            out.append(_bar(label, "share", o["share"], mid - 9, 18, "bar-share", scale))
        if o["estimate"] is not None:
            lo, hi = scale.x(o["ci_low"]), scale.x(o["ci_high"])
            out.append(
                f'<g class="whisker"><line x1="{lo:.1f}" y1="{mid}" x2="{hi:.1f}" y2="{mid}"/>'
                f'<line x1="{lo:.1f}" y1="{mid - 7}" x2="{lo:.1f}" y2="{mid + 7}"/>'
                f'<line x1="{hi:.1f}" y1="{mid - 7}" x2="{hi:.1f}" y2="{mid + 7}"/></g>'
            )
            ex = scale.x(o["estimate"])
            out.append(
                f'<path d="M{ex:.1f} {mid - 6}l5 6l-5 6l-5 -6z" class="mark-est">'
                f"<title>{escape(label)}: unbiased estimate {scale.text(o['estimate'])}</title>"
                "</path>"
            )
        y += row_height
    out.append(
        f'<line x1="{LABEL_W}" y1="{TOP - 4}" x2="{LABEL_W}" y2="{plot_bottom}" class="axis"/>'
    )
    out.append("</svg>")
    return Markup("".join(out))


def _bar(
    label: str, what: str, value: float, y: float, height: int, css: str, scale: Scale = SHARES
) -> str:
    """One horizontal bar from the axis's start to `value`, with its value as a tooltip."""
    x0, x1 = scale.x(scale.low), scale.x(value)
    return (
        f'<rect x="{x0:.1f}" y="{y:.1f}" width="{max(x1 - x0, 0):.1f}" height="{height}" '
        f'class="{css}"><title>{escape(label)}: {what} {scale.text(value)}</title></rect>'
    )


#: The series chart: the waves across, the estimate up (docs/researchers.md, "Series").
SERIES_HEIGHT = 220
SERIES_LEFT = 56
SERIES_TOP = 14
SERIES_BOTTOM = 34


def series_chart(
    points: Sequence[Mapping[str, Any]], confidence: float, title: str, scale: Scale = SHARES
) -> Markup:
    """An inline <svg> of one question option across the waves of a series: per wave (`wave`,
    `estimate`, `ci_low`, `ci_high`; the estimate None when the wave has none) a dot with its
    interval's whisker, the dots joined in wave order; the numbers spelled out in <desc>."""
    uid = f"chart-{next(_ids)}"
    waves = [int(p["wave"]) for p in points]
    first, last = (min(waves), max(waves)) if waves else (1, 1)
    plot_w = WIDTH - SERIES_LEFT - RIGHT
    plot_bottom = SERIES_HEIGHT - SERIES_BOTTOM

    def x(wave: int) -> float:
        if last == first:
            return SERIES_LEFT + plot_w / 2
        return SERIES_LEFT + plot_w * (wave - first) / (last - first)

    def y(value: float) -> float:
        share = (value - scale.low) / (scale.high - scale.low)
        return plot_bottom - (plot_bottom - SERIES_TOP) * min(max(share, 0.0), 1.0)

    words = []
    for p in points:
        if p["estimate"] is None:
            words.append(f"wave {p['wave']}: no estimate")
        else:
            words.append(
                f"wave {p['wave']}: estimate {scale.text(p['estimate'])}, {confidence:.0%} "
                f"interval {scale.text(p['ci_low'])} to {scale.text(p['ci_high'])}"
            )
    out = [
        f'<svg class="chart series-chart" viewBox="0 0 {WIDTH} {SERIES_HEIGHT}" width="100%" '
        f'role="img" aria-labelledby="{uid}-t {uid}-d">',
        f'<title id="{uid}-t">{escape(title)}: estimates by wave with {confidence:.0%} '
        "intervals</title>",
        f'<desc id="{uid}-d">{escape("; ".join(words) + ".")}</desc>',
    ]
    for tick in scale.ticks():
        ty = y(tick)
        label = f"{tick:.0%}" if scale is SHARES else f"{tick:.4g}"
        out.append(
            f'<line x1="{SERIES_LEFT}" y1="{ty:.1f}" x2="{WIDTH - RIGHT}" y2="{ty:.1f}" '
            'class="grid"/>'
        )
        out.append(
            f'<text x="{SERIES_LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end" class="tick">'
            f"{label}</text>"
        )
    drawn = [p for p in points if p["estimate"] is not None]
    if len(drawn) > 1:
        line = " ".join(f"{x(int(p['wave'])):.1f},{y(p['estimate']):.1f}" for p in drawn)
        out.append(f'<polyline points="{line}" class="series-line" fill="none"/>')
    for p in points:
        px = x(int(p["wave"]))
        out.append(
            f'<text x="{px:.1f}" y="{plot_bottom + 18}" text-anchor="middle" class="tick">'
            f"{int(p['wave'])}</text>"
        )
        if p["estimate"] is None:
            continue
        low, high = y(p["ci_low"]), y(p["ci_high"])
        out.append(
            f'<g class="whisker">'
            f'<line x1="{px:.1f}" y1="{low:.1f}" x2="{px:.1f}" y2="{high:.1f}"/>'
            f'<line x1="{px - 6:.1f}" y1="{low:.1f}" x2="{px + 6:.1f}" y2="{low:.1f}"/>'
            f'<line x1="{px - 6:.1f}" y1="{high:.1f}" x2="{px + 6:.1f}" y2="{high:.1f}"/></g>'
        )
        out.append(
            f'<circle cx="{px:.1f}" cy="{y(p["estimate"]):.1f}" r="4" class="bar-est">'
            f"<title>wave {int(p['wave'])}: estimate {scale.text(p['estimate'])}</title></circle>"
        )
    out.append(
        f'<line x1="{SERIES_LEFT}" y1="{plot_bottom}" x2="{WIDTH - RIGHT}" y2="{plot_bottom}" '
        'class="axis"/>'
    )
    out.append(
        f'<text x="{SERIES_LEFT + plot_w / 2:.1f}" y="{SERIES_HEIGHT - 4}" text-anchor="middle" '
        'class="tick">wave</text>'
    )
    out.append("</svg>")
    return Markup("".join(out))
