"""The web face: the Flask app factory, the JSON API, the WSGI report endpoint, the researcher
dashboard, authentication, abuse limits, problem+json errors, charts, templates, static files and
the OpenAPI document.

Views here translate HTTP to calls on ingestion, the store and the statistics; they hold no SQL
and no estimator of their own.
"""

from deniable.aggregator.web.app import create_app

__all__ = ["create_app"]
