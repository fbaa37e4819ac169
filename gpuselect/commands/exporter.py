"""``gpuselect exporter``: serve GPU metrics and health findings for Prometheus."""

from __future__ import annotations

import argparse

HELP = "serve GPU metrics (DCGM-exporter names) and health findings over HTTP for Prometheus"


def _seconds(what: str, lo: float, hi: float):  # type: ignore[no-untyped-def]
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number of seconds, not {text!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{what} must be between {lo:g} and {hi:g} seconds, not {text}")
        return v

    return parse


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"--port must be a port number 0..65535, not {text!r}")
    return int(text)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=_port, default=9401, help="TCP port (default 9401; 0 picks a free one)")
    parser.add_argument(
        "--bind",
        default="127.0.0.1",
        metavar="ADDR",
        help="address to listen on (default 127.0.0.1, this machine only; 0.0.0.0 for every interface)",
    )
    parser.add_argument(
        "--interval",
        type=_seconds("--interval", 0, 3600),
        default=10.0,
        metavar="S",
        help="collect at most this often; scrapes in between get the same data (default 10)",
    )
    parser.add_argument(
        "--scrape-timeout",
        type=_seconds("--scrape-timeout", 0.1, 300),
        default=5.0,
        metavar="S",
        help="a scrape waits at most this long for fresh data, then gets the last good data (default 5)",
    )
    parser.add_argument("--bench", metavar="FILE", help="also serve a saved `gpuselect bench --format json` result")


def run(args: argparse.Namespace) -> int:
    import sys
    import time

    from gpuselect.metrics.exporter import CachedCollector, machine_collector, serve

    bench = _load_bench(args.bench) if args.bench else None
    source = CachedCollector(
        machine_collector(bench_devices=bench), max_age_s=args.interval, scrape_timeout_s=args.scrape_timeout
    )
    server = serve(source, args.port, args.bind)
    host, port = server.server_address[:2]
    where = f"[{host}]" if ":" in str(host) else host  # an IPv6 address in a URL is bracketed
    print(f"gpuselect exporter: serving http://{where}:{port}/metrics (Ctrl-C stops)", file=sys.stderr, flush=True)
    if args.bind not in ("127.0.0.1", "::1", "localhost"):
        print(
            "gpuselect exporter: note: anyone who can reach this address can read the metrics (host name, GPU UUIDs)",
            file=sys.stderr,
            flush=True,
        )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
        return 0


def _load_bench(path: str, *, nvml: object = None) -> list[dict]:  # type: ignore[type-arg]
    import sys

    from gpuselect.app.machine import bench_from_doc, this_machine
    from gpuselect.bench.io import load_bench_file

    # The bounded, checked reader --bench uses everywhere: a FIFO, /dev/zero, a binary or a damaged
    # file is one sentence, not a hang, a full memory or an internal error.
    doc = load_bench_file(path)
    # Only this machine's devices, as `estimate --bench` keeps them: another machine's record was
    # served under this host's name, as if measured here.
    machine = this_machine(bench=bench_from_doc(doc, source=f"the benchmark result {path}"), nvml=nvml)
    for note in machine.bench_notes:
        print(f"gpuselect exporter: {note}", file=sys.stderr, flush=True)
    own = {d.device for d in machine.bench.devices}
    return [d for d in doc["devices"] if isinstance(d, dict) and d.get("device") in own]
