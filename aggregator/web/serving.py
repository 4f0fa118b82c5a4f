"""Serving the app with werkzeug's threaded server (gunicorn is for deployments: see deploy/)."""

from __future__ import annotations

import errno
import socket

from flask import Flask
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from deniable.shared.errors import DeniableError


class _QuietRequestHandler(WSGIRequestHandler):
    """Logs errors but no request lines: those would record respondents' IP addresses."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


def bind(app: Flask, host: str, port: int) -> BaseWSGIServer:
    """A threaded server bound to host:port (not yet serving); a clear error if it can't bind."""
    _check_free(host, port)
    try:
        return make_server(host, port, app, threaded=True, request_handler=_QuietRequestHandler)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise DeniableError(
                f"port {port} on {host} is in use; stop what runs there or pass --port"
            ) from None
        raise DeniableError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    except SystemExit:  # werkzeug exits when the port is taken on some platforms
        raise DeniableError(
            f"port {port} on {host} is in use; stop what runs there or pass --port"
        ) from None


def _check_free(host: str, port: int) -> None:
    # werkzeug prints its own two lines and exits when the port is taken: ask first.
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise DeniableError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise DeniableError(
                    f"port {port} on {host} is in use; stop what runs there or pass --port"
                ) from None
            raise DeniableError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def serve(app: Flask, host: str, port: int) -> None:
    """Serve until interrupted, one thread per request, no reloader and no debugger."""
    server = bind(app, host, port)
    try:
        server.serve_forever()
    finally:
        server.server_close()
