"""The aggregator: Flask app factory, storage, ingestion, estimation and the operator CLI."""

from deniable.aggregator.analyze import analyze
from deniable.aggregator.app import create_app

__all__ = ["analyze", "create_app"]
