"""The aggregator: Flask app factory, storage, ingestion, estimation and the operator CLI.

Its names load on first use, so `deniable-aggregator` can say which extras are missing
(`pip install 'deniable[aggregator]'`) instead of failing inside an import."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deniable.aggregator.analyze import analyze
    from deniable.aggregator.app import create_app

__all__ = ["analyze", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "analyze":
        from deniable.aggregator.analyze import analyze

        return analyze
    if name == "create_app":
        from deniable.aggregator.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
