"""gunicorn settings for the deniable aggregator.

    gunicorn -c deploy/gunicorn.conf.py 'deniable.aggregator:create_app()'

- worker_class "gthread": each worker process serves DENIABLE_THREADS requests at once on
  threads. Checking and verifying a report is per-thread work, and the threads of a process
  share one SQLite transaction (group commit, aggregator/store/commit.py): concurrent reports cost
  one fsync, not one each, and each is answered only after its transaction commits.
- workers: DENIABLE_WORKERS, else WEB_CONCURRENCY, else one per CPU core. Every worker opens
  its own connections to the one SQLite file (WAL), so any number of workers is safe; more
  workers than cores only adds contention for the write lock.
- bind: DENIABLE_BIND (default 127.0.0.1:8000); put a TLS reverse proxy in front of it and
  set forwarded_allow_ips to the proxy's address if it is not on this host.
- No access log: its lines would record respondents' IP addresses. Errors go to stderr.
- keepalive: respondents' devices and the proxy reuse connections between requests.
- One BLAS thread per worker (OPENBLAS_NUM_THREADS and the like, unless set): the workers are
  the parallelism, and an analysis's matrices have a row per distinct answer pattern; threads
  spinning on the cores the workers share made a 40 ms regression take 0.3-0.5 s on a busy
  2-core machine (benchmarks/scale.py).

Settings given on the gunicorn command line override these.
"""

from __future__ import annotations

import os


def _whole(*names: str, default: int) -> int:
    """The first of these environment variables that is set, as a positive whole number."""
    for name in names:
        text = os.environ.get(name, "").strip()
        if text:
            value = int(text)
            if value < 1:
                raise ValueError(f"{name}: expected a whole number from 1, got {text!r}")
            return value
    return default


for _blas in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_blas, "1")  # the workers fork after this, and import numpy then

wsgi_app = "deniable.aggregator:create_app()"
bind = os.environ.get("DENIABLE_BIND", "127.0.0.1:8000")
worker_class = "gthread"
workers = _whole("DENIABLE_WORKERS", "WEB_CONCURRENCY", default=os.cpu_count() or 1)
threads = _whole("DENIABLE_THREADS", default=8)
backlog = 2048
keepalive = 5
timeout = 30
graceful_timeout = 30
accesslog = None
errorlog = "-"
loglevel = os.environ.get("DENIABLE_LOG_LEVEL", "warning")
# Limits on the request line and headers; the body limit is DENIABLE_MAX_BODY (the app's).
limit_request_line = 8190
limit_request_fields = 100
