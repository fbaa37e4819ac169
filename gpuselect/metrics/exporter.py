"""``gpuselect exporter``: serve this machine's metrics over HTTP for Prometheus.

A scrape never waits longer than ``scrape_timeout_s``: collection (NVML can stall on a sick GPU)
runs in a worker thread; if it does not finish in time, the scrape gets the last good data and
``gpuselect_exporter_data_age_seconds`` says how old it is. Collections never pile up: at most
one runs at a time. prometheus_client serves the HTTP side (an optional extra:
``pip install gpuselect[exporter]``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from gpuselect.metrics.families import Family


class CachedCollector:
    """Collect at most every ``max_age_s``, wait at most ``scrape_timeout_s``, keep the last good."""

    def __init__(
        self,
        collect: Callable[[], list[Family]],
        *,
        max_age_s: float = 10.0,
        scrape_timeout_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._collect, self.max_age_s, self.scrape_timeout_s, self._clock = collect, max_age_s, scrape_timeout_s, clock
        self._lock = threading.Lock()
        self._good: list[Family] | None = None
        self._good_at: float | None = None
        self._inflight: threading.Event | None = None
        self._last_duration: float | None = None
        self._last_ok = False
        self._failures = 0
        self._timeouts = 0
        self._last_error: str | None = None

    def _worker(self, done: threading.Event) -> None:
        start = self._clock()
        try:
            fams = self._collect()
            with self._lock:
                self._good, self._good_at, self._last_ok, self._last_error = fams, self._clock(), True, None
        except Exception as exc:  # noqa: BLE001 - a failed collection is reported as a metric
            with self._lock:
                self._failures += 1
                self._last_ok = False
                self._last_error = f"{type(exc).__name__}: {exc}"[:200]
        finally:
            with self._lock:
                self._last_duration = self._clock() - start
                self._inflight = None
            done.set()

    def families(self) -> list[Family]:
        with self._lock:
            fresh = self._good_at is not None and self._clock() - self._good_at < self.max_age_s
            done = self._inflight
            if not fresh and done is None:
                done = self._inflight = threading.Event()
                threading.Thread(target=self._worker, args=(done,), name="gpuselect-collect", daemon=True).start()
        timed_out = False
        if not fresh and done is not None and not done.wait(self.scrape_timeout_s):
            timed_out = True
            with self._lock:
                self._timeouts += 1
        with self._lock:
            data = list(self._good or [])
            age = None if self._good_at is None else self._clock() - self._good_at
            ok = self._last_ok and not timed_out
            meta = [
                Family(
                    "gpuselect_exporter_collect_success",
                    "gauge",
                    "1 when this scrape's data was collected in time, 0 when it is older data (a slow or failed collection).",
                ),
                Family(
                    "gpuselect_exporter_data_age_seconds",
                    "gauge",
                    "Age of the data served (seconds since it was collected).",
                ),
                Family(
                    "gpuselect_exporter_collect_duration_seconds",
                    "gauge",
                    "How long the last finished collection took.",
                ),
                Family(
                    "gpuselect_exporter_collect_failures",
                    "gauge",
                    "Collections that failed since the exporter started.",
                ),
                Family(
                    "gpuselect_exporter_scrape_timeouts",
                    "gauge",
                    "Scrapes answered with older data because collection ran past the time bound.",
                ),
            ]
            meta[0].add({}, 1 if ok else 0)
            meta[1].add({}, age)
            meta[2].add({}, self._last_duration)
            meta[3].add({}, self._failures)
            meta[4].add({}, self._timeouts)
        return data + meta


class _PromBridge:
    """A prometheus_client collector over our families (every family is a gauge: see families.py)."""

    def __init__(self, source: CachedCollector) -> None:
        self.source = source

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import Metric

        for fam in self.source.families():
            if not fam.samples:
                continue
            m = Metric(fam.name, fam.help, fam.kind)
            for labels, value in fam.samples:
                m.add_sample(fam.name, labels, value)
            yield m


def serve(source: CachedCollector, port: int, bind: str = "127.0.0.1") -> Any:
    """Start the HTTP server in a daemon thread; returns the server (``server_port`` is the port)."""
    try:
        from prometheus_client import CollectorRegistry, make_wsgi_app
    except ImportError:
        from gpuselect.errors import UsageError

        raise UsageError("the exporter needs prometheus_client: pip install 'gpuselect[exporter]'") from None
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_PromBridge(source))
    try:
        server = _start(port, bind, _only_metrics(make_wsgi_app(registry)))
    except OSError as exc:
        from gpuselect.errors import UsageError

        raise UsageError(f"cannot listen on {bind}:{port}: {exc.strerror or exc}") from None
    return server


#: Seconds a connection may sit idle: a client that sends half a request holds a thread until
#: then (1,100 half-sent requests held 1,102 threads, forever).
IDLE_TIMEOUT_S = 30.0


def _only_metrics(app: Callable[..., Any]) -> Callable[..., Any]:
    """/metrics (and /) as prometheus_client serves them, HEAD too (health probes got 405); any
    other path 404 (every path answered with the metrics)."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO", "/") not in ("/", "/metrics"):
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"Not found: the metrics are at /metrics\n"]
        if environ.get("REQUEST_METHOD") == "HEAD":
            got: list[Any] = []
            body = b"".join(
                app({**environ, "REQUEST_METHOD": "GET"}, lambda status, headers, *_: got.append((status, headers)))
            )
            status, headers = got[0]
            length = [(k, v) for k, v in headers if k.lower() != "content-length"] + [
                ("Content-Length", str(len(body)))
            ]
            start_response(status, length)
            return []  # a GET's headers, its length included, and no body
        return app(environ, start_response)

    return wrapped


def _start(port: int, bind: str, app: Callable[..., Any]) -> Any:
    """A threaded WSGI server on ``bind`` (IPv4 or IPv6) in a daemon thread, whose connections time
    out when idle."""
    import socket
    import sys
    import threading
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    family = socket.getaddrinfo(bind, port, type=socket.SOCK_STREAM)[0][0]

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        address_family = family

        def handle_error(self, request: Any, client_address: Any) -> None:
            # an idle or vanished client (a port scanner, a TCP health check) is no error worth
            # a traceback on stderr; anything else is socketserver's to print
            if not isinstance(sys.exc_info()[1], (TimeoutError, ConnectionError)):
                super().handle_error(request, client_address)

    class Handler(WSGIRequestHandler):
        timeout = IDLE_TIMEOUT_S

        def log_message(self, format: str, *args: Any) -> None:
            pass  # no line per scrape on stderr

    server = make_server(bind, port, app, Server, handler_class=Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def machine_collector(
    *, nvml: Any | None = None, bench_devices: list[dict[str, Any]] | None = None
) -> Callable[[], list[Family]]:
    """Detect + health (+ a saved benchmark's figures) each time it is called. Each GPU's identity
    labels are remembered from its last good read, so a GPU that is lost keeps its series."""
    from gpuselect.metrics.families import GpuIdentities

    identities = GpuIdentities()

    def collect() -> list[Family]:
        from gpuselect.hardware.snapshot import detect
        from gpuselect.health.rules import evaluate
        from gpuselect.metrics.families import machine_families

        snap = detect(probe=False, nvml=nvml)
        return machine_families(snap, evaluate(snap), bench_devices or [], identities)

    return collect
