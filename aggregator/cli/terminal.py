"""Text that others supplied, made safe to print on an operator's terminal (the one rule of
deniable.shared.terminal, which the respondent's CLI uses too)."""

from __future__ import annotations

from deniable.shared.terminal import shown, shown_json

__all__ = ["shown", "shown_json"]
