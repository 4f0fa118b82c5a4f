"""Survey planning: respondents needed for a margin of error at an epsilon, or the margin n buys.

Pure arithmetic on the shared mechanisms. For an option's unbiased estimate the variance at n
is lambda (1 - lambda) / (n (p* - q*)^2); its worst case over every true distribution is the
mechanism's `worst_variance(n)`. A two-sided interval of half-width m at confidence c then needs

    n = ceil(z^2 * worst_variance(1) / m^2),   z = the (1 + c) / 2 normal quantile,

and n respondents buy the margin z * sqrt(worst_variance(n)).

Integer questions (`onebit`) are planned in the question's units: the mean's variance is that
of a binary estimate times (max - min)^2, so the margin is a number on the question's scale.
A multi question (`multi`) is planned per option: each is rr at epsilon / k. A text question
(`hcms`, `cms`) is planned for one candidate's share with a sketch of k hash functions and m
columns, by the bound of Apple's estimator before collisions (joint decoding adds little where
the candidates rarely share columns, and removes the collisions' bias).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from deniable.aggregator.stats.estimate import upper_quantile
from deniable.shared.mechanisms import MAX_EPSILON, MIN_EPSILON, Coins, Mechanism, OneBit, Planning
from deniable.shared.questions import PLANNED
from deniable.shared.sketches import RAPPOR
from deniable.shared.survey import MAX_OPTIONS as SURVEY_MAX_OPTIONS

#: As many options as a survey question may have.
MAX_OPTIONS = SURVEY_MAX_OPTIONS
#: More respondents than any survey will have: a margin needing more is refused, not overflowed.
MAX_RESPONDENTS = 10**12


class PlanError(ValueError):
    """Planning input the planner cannot use; the message says what is allowed."""


@dataclass(frozen=True)
class PlanRow:
    """One mechanism's numbers at the planned epsilon."""

    name: str
    mechanism: Mechanism
    respondents: int | None
    margin: float | None


@dataclass(frozen=True)
class Plan:
    """A planning answer: the chosen mechanism's number and a comparison of the others."""

    epsilon: float
    options: int
    confidence: float
    z: float
    margin: float | None
    respondents: int | None
    chosen: PlanRow
    rows: list[PlanRow]
    width: int | None = None
    sketch: tuple[int, ...] | None = None


def z_for(confidence: float) -> float:
    """The two-sided normal quantile for a confidence level in (0, 1)."""
    if not isinstance(confidence, int | float) or not 0 < confidence < 1:
        raise PlanError(
            f"confidence: expected a number between 0 and 1, like 0.95, got {confidence!r}"
        )
    return upper_quantile((1.0 - float(confidence)) / 2.0)


def check_epsilon(epsilon: float) -> float:
    """The epsilon if the mechanisms accept it, else PlanError."""
    if not isinstance(epsilon, int | float) or not MIN_EPSILON <= epsilon <= MAX_EPSILON:
        raise PlanError(
            f"epsilon: expected a number from {MIN_EPSILON} to {MAX_EPSILON}, got {epsilon!r}"
        )
    return float(epsilon)


def coins_at(epsilon: float) -> Coins:
    """The two-coin design with a fair second coin (yes = 1/2) at (at most) epsilon."""
    return Coins.planned(2, epsilon)  # type: ignore[return-value]


def rappor_at(epsilon: float, shape: tuple[int, int, int] | None = None) -> RAPPOR:
    """RAPPOR with the permanent response only (p = 0, q = 1) at (at most) epsilon."""
    return RAPPOR.planned(0, epsilon, shape=shape)


def mechanism_for(
    name: str, k: int, epsilon: float, width: int = 1, sketch: tuple[int, ...] | None = None
) -> Mechanism:
    """The mechanism `name` over k options (onebit: a range `width` wide; hcms, cms: a sketch
    of (hash functions, columns)) at epsilon; PlanError if it does not fit."""
    if name not in PLANNABLE:
        raise PlanError(f"mechanism: expected one of {', '.join(MECHANISM_NAMES)}, got {name!r}")
    planned = PLANNABLE[name]
    if planned.binary_only and k != 2:
        raise PlanError(
            f"mechanism: {name} answers binary questions only (options 2), got options {k}"
        )
    try:
        return BUILDERS[name](k, epsilon, width, sketch)  # type: ignore[no-any-return]
    except ValueError as exc:  # a sketch's shape, or an epsilon too small per option
        raise PlanError(f"sketch: {exc}" if planned.shape else str(exc)) from None


#: Every mechanism the margin planner takes, by the name it is asked for, in the order its
#: help lists them (each class declares its planning: deniable.shared.mechanisms.Planning).
PLANNABLE: dict[str, Planning] = {m.planning.name: m.planning for m in PLANNED if m.planning.margin}
#: How each is built at an epsilon, by the same names.
BUILDERS = {m.planning.name: m.planned for m in PLANNED}
#: Every name the planner takes (`--mechanism`).
MECHANISM_NAMES = tuple(PLANNABLE)
#: The text sketches a plan compares, by name.
SKETCHES = tuple(name for name, planned in PLANNABLE.items() if planned.rows == "sketches")


def _planned(name: str) -> Planning:
    """The planner's entry for a row's name ("auto (grr)" is planned like the compared ones)."""
    if name in PLANNABLE:
        return PLANNABLE[name]
    return next(p for p in PLANNABLE.values() if p.compared and not p.binary_only)


def _scale(mechanism: Mechanism) -> float:
    """The estimate's units per unit of share: max - min for an integer mean, else 1."""
    return float(mechanism.high - mechanism.low) if isinstance(mechanism, OneBit) else 1.0


def respondents_needed(mechanism: Mechanism, margin: float, confidence: float = 0.95) -> int:
    """Respondents for a worst-case interval half-width `margin` at `confidence` (for onebit, in
    the question's units)."""
    scale = _scale(mechanism)
    if not isinstance(margin, int | float) or not 0 < margin < scale:
        example = "0.05" if scale == 1 else f"{scale / 20:g}"
        raise PlanError(
            f"margin: expected a number between 0 and {scale:g}, like {example}, got {margin!r}"
        )
    return respondents_for_margin(
        mechanism.worst_variance(1) * scale * scale, margin, z_for(confidence)
    )


def respondents_for_margin(unit_variance: float, margin: float, z: float, *, per: str = "") -> int:
    """The smallest n (at least 2) with z * sqrt(unit_variance / n) <= margin, the one answer of
    every planner; PlanError, never an overflow or a division by zero, when it would pass
    MAX_RESPONDENTS (a tiny margin whose square is 0 needs infinitely many)."""
    square = margin * margin
    needed = z * z * unit_variance / square if square > 0 else math.inf
    if not needed <= MAX_RESPONDENTS:  # inf and nan too
        raise PlanError(
            f"margin: ±{margin:g} would need more than {MAX_RESPONDENTS:,} respondents{per}; "
            "ask for a wider margin"
        )
    return max(2, math.ceil(needed))


def margin_for(mechanism: Mechanism, respondents: int, confidence: float = 0.95) -> float:
    """The worst-case interval half-width that `respondents` buy at `confidence`."""
    if isinstance(respondents, bool) or not isinstance(respondents, int) or respondents < 1:
        raise PlanError(f"respondents: expected a whole number from 1, got {respondents!r}")
    return z_for(confidence) * math.sqrt(mechanism.worst_variance(respondents)) * _scale(mechanism)


def compared(k: int) -> tuple[str, ...]:
    """The mechanisms worth comparing for k options: the binary ones for 2, else the others."""
    return tuple(n for n, p in PLANNABLE.items() if p.compared and p.binary_only == (k == 2))


def default_mechanism(k: int) -> str:
    """The mechanism planned for k options when none is named (rr for 2, else auto)."""
    return next(n for n, p in PLANNABLE.items() if p.default and p.binary_only == (k == 2))


def plan(
    epsilon: float,
    *,
    margin: float | None = None,
    respondents: int | None = None,
    options: int = 2,
    confidence: float = 0.95,
    mechanism: str | None = None,
    width: int | None = None,
    sketch: tuple[int, ...] | None = None,
) -> Plan:
    """Respondents needed for `margin` (or the margin `respondents` buy), with a comparison.

    `mechanism="onebit"` plans an integer question's mean over a range `width` = max - min
    wide (the margin in its units); `"multi"` plans each option of a multi question."""
    epsilon = check_epsilon(epsilon)
    if (mechanism in PLANNABLE and PLANNABLE[mechanism].ranged) != (width is not None):
        raise PlanError(
            "range: give the range max - min (--range) with mechanism onebit, and only then"
        )
    if width is not None and (
        isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= 2 * 10**9
    ):
        raise PlanError(f"range: expected a whole number max - min from 1, got {width!r}")
    if isinstance(options, bool) or not isinstance(options, int) or not 2 <= options <= MAX_OPTIONS:
        raise PlanError(
            f"options: expected a whole number from 2 to {MAX_OPTIONS}, got {options!r}"
        )
    if (margin is None) == (respondents is None):
        raise PlanError("give either a margin (respondents needed) or respondents (margin bought)")
    z = z_for(confidence)
    name = mechanism or default_mechanism(options)

    def row(label: str, mech: Mechanism) -> PlanRow:
        if margin is not None:
            return PlanRow(label, mech, respondents_needed(mech, margin, confidence), None)
        return PlanRow(label, mech, None, margin_for(mech, respondents, confidence))

    rows_kind = _planned(name).rows
    if rows_kind == "alone":
        chosen = row(name, mechanism_for(name, options, epsilon, width or 1))
        return Plan(
            epsilon, options, float(confidence), z, margin, respondents, chosen, [chosen], width
        )
    if rows_kind == "decoded":
        return _decoded_plan(name, epsilon, margin, respondents, options, confidence, z, sketch)
    if rows_kind == "sketches":
        size = sketch or PLANNABLE[name].shape
        rows = [
            row(other, mechanism_for(other, options, epsilon, sketch=size)) for other in SKETCHES
        ]
        chosen = rows[SKETCHES.index(name)]
        return Plan(
            epsilon, options, float(confidence), z, margin, respondents, chosen, rows, None, size
        )
    if sketch is not None:
        raise PlanError(f"sketch: give --sketch only with --mechanism {' or '.join(SKETCHES)}")
    rows = [row(other, mechanism_for(other, options, epsilon)) for other in compared(options)]
    chosen = next((r for r in rows if r.name == name), None)
    if chosen is None:
        chosen_mech = mechanism_for(name, options, epsilon)
        label = f"{name} ({chosen_mech.name})" if _planned(name).picks else name
        chosen = row(label, chosen_mech)
        rows.append(chosen)
    return Plan(epsilon, options, float(confidence), z, margin, respondents, chosen, rows)


class _Planned:
    """A mechanism stand-in for a plan row: p*, q* and a worst variance from a formula."""

    def __init__(self, p_star: float, q_star: float, per_report: float) -> None:
        self.p_star, self.q_star, self.per_report = p_star, q_star, per_report

    def worst_variance(self, n: int) -> float:
        return self.per_report / n


def _decoded_plan(
    name: str,
    epsilon: float,
    margin: float | None,
    respondents: int | None,
    candidates: int,
    confidence: float,
    z: float,
    shape: tuple[int, ...] | None,
) -> Plan:
    """A sketch planned from its decoder (RAPPOR): the largest per-report variance of a
    candidate's share among `candidates` equally frequent ones, from the decoder itself (it
    depends on their Bloom bits)."""
    from deniable.aggregator.stats.limits import DEFAULT_LIMITS
    from deniable.aggregator.stats.sketch_estimate import SketchDecodeError, decoder, decoder_cells
    from deniable.aggregator.stats.sketch_simulate import expected_counts

    if shape is not None and (
        len(shape) != 3 or any(isinstance(x, bool) or not isinstance(x, int) for x in shape)
    ):
        raise PlanError("sketch: for rappor give BITSxHASHESxCOHORTS, like 32x2x16")
    if shape is not None and min(shape) < 1:
        raise PlanError(f"sketch: bits, hashes and cohorts are whole numbers from 1, got {shape}")
    if margin is not None and (
        isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 < margin < 1
    ):
        raise PlanError(f"margin: expected a number between 0 and 1, like 0.01, got {margin!r}")
    default = PLANNABLE[name].shape
    try:
        sketch = BUILDERS[name](candidates, epsilon, 1, tuple(shape) if shape else default)
    except ValueError as exc:
        raise PlanError(f"sketch: {exc}") from None
    # The variance comes from the decoder itself: bounded as a results request's decoders are.
    cells, limit = decoder_cells(sketch, candidates), DEFAULT_LIMITS.max_decoder_cells
    if cells > limit:
        raise PlanError(
            f"sketch: {candidates} candidates of a {sketch.k}x{sketch.h}x{sketch.m} RAPPOR "
            f"need a decoder of {cells:,} cells, more than the {limit:,} an aggregator decodes "
            "by default (DENIABLE_MAX_DECODER_CELLS); use fewer hashes, cohorts or candidates"
        )
    try:
        words = [f"candidate {i}" for i in range(candidates)]
        found = decoder(sketch, words)
    except (ValueError, SketchDecodeError) as exc:
        raise PlanError(f"sketch: {exc}") from None
    n = 1_000_000
    shares = np.full(candidates, 1.0 / candidates)
    counts = expected_counts(sketch, words, shares, n)
    total, squares = found.moments(n, counts, shares)
    per_report = float(np.max(squares / n - (total / n) ** 2))
    mech = _Planned(float(sketch.p_star), float(sketch.q_star), per_report)
    if margin is not None:
        needed = respondents_for_margin(per_report, margin, z)
        row = PlanRow(name, mech, needed, None)  # type: ignore[arg-type]
    else:
        if isinstance(respondents, bool) or not isinstance(respondents, int) or respondents < 1:
            raise PlanError(f"respondents: expected a whole number from 1, got {respondents!r}")
        row = PlanRow(name, mech, None, z * math.sqrt(per_report / respondents))  # type: ignore[arg-type]
    return Plan(
        epsilon,
        candidates,
        float(confidence),
        z,
        margin,
        respondents,
        row,
        [row],
        None,
        tuple(shape) if shape else default,  # type: ignore[arg-type]
    )


def format_plan(result: Plan) -> str:
    """The plan as text: the comparison table, then the chosen number alone on the last line."""
    planned = _planned(result.chosen.name)
    if result.sketch is not None and planned.rows == "decoded":
        bits, hashes, cohorts = result.sketch  # type: ignore[misc]
        what = (
            f"one text candidate's share among {result.options} equally frequent ones, RAPPOR "
            f"with {bits} bits, {hashes} hashes, {cohorts} cohorts (permanent response only)"
        )
    elif result.sketch is not None:
        hashes, columns = result.sketch
        what = (
            f"one text candidate's share with a sketch of {hashes} hash functions x {columns} "
            "columns"
        )
    elif result.width is not None:
        what = f"a mean over a range of {result.width} (margin in the question's units)"
    elif planned.what is not None:
        what = planned.what.format(k=result.options)
    else:
        what = f"{result.options} options"
    lines = [
        f"epsilon {result.epsilon:g}, {what}, confidence {result.confidence:.0%} "
        f"(z = {result.z:.6f}), "
        + (
            "at equal shares"
            if planned.rows == "decoded"
            else "worst case over the true distribution"
        ),
    ]
    if result.margin is not None:
        lines.append(f"respondents needed for a margin of error of ±{result.margin:g}:")
        header = f"  {'mechanism':<12} {'p*':>8} {'q*':>8} {'respondents':>12}"
    else:
        lines.append(f"margin of error that {result.respondents} respondents buy:")
        header = f"  {'mechanism':<12} {'p*':>8} {'q*':>8} {'margin':>12}"
    lines.append(header)
    for r in result.rows:
        value = f"{r.respondents:>12,}" if r.respondents is not None else f"{r.margin:>12.4f}"
        mark = "  <- chosen" if r is result.chosen else ""
        p, q = float(r.mechanism.p_star), float(r.mechanism.q_star)
        lines.append(f"  {r.name:<12} {p:>8.4f} {q:>8.4f} {value}{mark}")
    if result.sketch is not None and planned.rows != "decoded":
        hashes, columns = result.sketch
        lines.append(
            f"  a sketch of {hashes} x {columns} keeps {2 * hashes * columns:,} counters (hcms; "
            f"cms {hashes * columns + hashes:,}); with Apple's estimator an answer of share s "
            f"lifts a candidate sharing its column by about s/{columns} on average, and joint "
            "decoding (the default) removes that for the listed candidates"
        )
    number = result.chosen.respondents if result.margin is not None else result.chosen.margin
    lines.append(str(number) if isinstance(number, int) else f"{number:.6f}")
    return "\n".join(lines)
