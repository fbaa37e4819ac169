"""``gpuselect fleet``: check every node of a cluster and measure its interconnect.

Launch under torchrun (or srun running torchrun on each node); rank 0 writes the report."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from gpuselect.commands import add_format_option
from gpuselect.commands.detect import add_probe_option

if TYPE_CHECKING:
    from gpuselect.fleet.model import FleetReport

HELP = "under torchrun: detect, health and collective bandwidth (within and across nodes) on every rank, one report"

EPILOG = """launch:
  torchrun --nproc-per-node 8 -m gpuselect fleet --output fleet.pdf
  torchrun --nnodes 4 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
      -m gpuselect fleet --output fleet.json
  srun --nodes 4 --ntasks-per-node 1 torchrun --nnodes 4 --nproc-per-node 8 \\
      --rdzv-backend c10d --rdzv-endpoint $MASTER:29500 -m gpuselect fleet --output fleet.json
Without torchrun it checks this machine in one process and measures no bandwidth.
A saved report is redrawn without measuring: gpuselect fleet --from fleet.json --output fleet.pdf

exit status:
  0  the report was written (see its health and stragglers)
  1  --fail-on warning: some rank has a warning (and none a critical finding)
  3  --fail-on warning|critical: some rank has a critical finding
     (with --fail-on, a saved INCOMPLETE report exits 4 as the failed run did)
  2  bad usage
  4  the run failed: a rank died, hung past --timeout-s, or a collective failed (the message
     names the ranks; rank 0 writes what it has, marked INCOMPLETE)"""


def _size(text: str) -> int:
    units = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30}
    t = text.strip().lower().replace(" ", "")
    num = t.rstrip("kmgib")
    unit = t[len(num) :]
    try:
        value = float(num) * units[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(
            f"--max-bytes must be a size such as 65536, 64K, 16M or 1G, not {text!r}"
        ) from None
    if not value.is_integer() or value < 1:
        raise argparse.ArgumentTypeError(f"--max-bytes must be a whole number of bytes, not {text!r}")
    if value > 16 * 1024**3:  # said as given: 1e308 printed as a 309-digit number
        raise argparse.ArgumentTypeError(f"--max-bytes must be at most 16G, not {text!r}")
    return int(value)


def _positive(kind: Callable[[str], float], what: str, hi: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            v = kind(text)
        except ValueError:
            whole = "a whole number" if kind is int else "a number"  # "--repeats 1.5" is a number
            raise argparse.ArgumentTypeError(f"{what} must be {whole}, not {text!r}") from None
        if not 0 < v <= hi:
            raise argparse.ArgumentTypeError(f"{what} must be above 0 and at most {hi:g}, not {text}")
        return v

    return parse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--output", "-o", metavar="FILE", help="rank 0 writes the report here: .json, .md or .pdf")
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing file that gpuselect did not write (a report it wrote is replaced anyway)",
    )
    add_format_option(parser)
    add_probe_option(parser)
    parser.add_argument(
        "--bench-quick", action="store_true", help="also run `bench --quick` on every rank's device (about 10 s)"
    )
    parser.add_argument(
        "--max-bytes",
        type=_size,
        default=None,
        metavar="SIZE",
        help="largest buffer of the sweep from 8 B (default 1G on NCCL, 64M on Gloo)",
    )
    parser.add_argument(
        "--repeats",
        type=_positive(int, "--repeats", 1000),
        default=5,
        help="timed repeats per size (default 5; the median counts)",
    )
    parser.add_argument(
        "--timeout-s",
        type=_positive(float, "--timeout-s", 86400),
        default=120.0,
        metavar="S",
        help="a rank that does not answer within this many seconds fails the run, named (default 120)",
    )
    parser.add_argument(
        "--backend",
        choices=("auto", "nccl", "gloo"),
        default="auto",
        help="auto (default): NCCL when torch sees CUDA GPUs, else Gloo",
    )
    parser.add_argument(
        "--fail-on",
        choices=("warning", "critical"),
        default=None,
        help="exit 1 (a warning) or 3 (a critical finding) when any rank's health has one, as `health` "
        "does; default: exit 0 whenever the report was written",
    )
    parser.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE.json",
        help="measure nothing: redraw a saved fleet report (e.g. as --output fleet.pdf)",
    )


def run(args: argparse.Namespace) -> int:
    import os
    import sys

    from gpuselect.fleet.run import FleetConfig, run_fleet
    from gpuselect.fleet.writers import format_of, to_json, to_text, write

    if args.from_file:
        # --from measures nothing: a measuring option beside it was silently dropped
        given = [o for o, v in (("--bench-quick", args.bench_quick), ("--max-bytes", args.max_bytes)) if v]
        given += ["--probe"] if args.probe is not None else []
        if given:
            from gpuselect.errors import UsageError

            raise UsageError(
                f"--from redraws a saved report and measures nothing: {', '.join(given)} cannot go with it"
            )
    if args.output:
        from gpuselect.fsutil import check_output

        format_of(args.output)  # a bad suffix fails before any work
        if os.environ.get("RANK", "0").strip() in ("", "0"):  # only rank 0 writes (its folder may be elsewhere)
            check_output(args.output, inputs=(args.from_file,), force=args.force)

    def on_output(rep: FleetReport) -> None:
        if args.output:
            path = write(rep, args.output)
            print(
                f"gpuselect fleet: wrote {path}" + ("" if rep.complete else " (INCOMPLETE)"),
                file=sys.stderr,
                flush=True,
            )
        if args.format == "json":
            print(to_json(rep), flush=True)
        else:
            print(to_text(rep), flush=True)

    if args.from_file:
        rep = _load(args.from_file)
        on_output(rep)
        return _health_status(rep, args.fail_on)
    cfg = FleetConfig(
        max_bytes=args.max_bytes,
        repeats=args.repeats,
        timeout_s=args.timeout_s,
        bench_quick=args.bench_quick,
        backend=args.backend,
        probe=bool(args.probe),
        on_output=on_output,
    )
    report, code = run_fleet(cfg)
    return code if code != 0 or report is None else _health_status(report, args.fail_on)


def _health_status(rep: FleetReport, fail_on: str | None) -> int:
    """``health``'s exit status over every rank (3 critical, 1 warning), where --fail-on asks for it;
    an incomplete report (a redrawn failed run) is the failed run's 4."""
    if fail_on is None:
        return 0
    if not rep.complete:  # ranks are missing: their health is unknown, and a gate must not pass it
        from gpuselect.fleet.run import EXIT_FLEET_FAILED

        return EXIT_FLEET_FAILED
    worst = {r.health_worst for r in rep.ranks}
    if "critical" in worst:
        return 3
    return 1 if fail_on == "warning" and "warning" in worst else 0


def _load(path: str) -> FleetReport:
    from gpuselect.errors import DataError
    from gpuselect.fleet.interconnect import MAX_REPORT_BYTES, MAX_TEXT_CHARS
    from gpuselect.fleet.model import report_from_dict
    from gpuselect.output import SCHEMA_VERSION
    from gpuselect.safe_io import check_fields, check_plain_text, read_json

    # The bounded reader: a FIFO, /dev/zero or a 200 MB file is one sentence, not a hang.
    doc = read_json(path, what="fleet report", max_bytes=MAX_REPORT_BYTES)
    check_plain_text(doc, str(path), max_len=MAX_TEXT_CHARS)
    if not isinstance(doc, dict) or doc.get("kind") != "fleet" or not isinstance(doc.get("report"), dict):
        raise DataError(f"{path} is not a `gpuselect fleet --output FILE.json` report")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise DataError(
            f"{path} is a fleet report of another version or damaged (schema {str(doc.get('schema_version'))[:20]}; "
            f"this gpuselect reads {SCHEMA_VERSION})"
        )
    try:
        rep = report_from_dict(doc["report"])
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        # "RankInfo.__init__() got an unexpected keyword argument 'x'" names Python, not the file
        m = re.search(
            r"(\w+)\.__init__\(\) (?:got an unexpected keyword argument|missing \d+ required "
            r"positional arguments?:) (.+)$",
            str(exc),
        )
        said = (
            f"{m.group(1)} entry: {'unknown field' if 'unexpected' in str(exc) else 'missing'} {m.group(2)}"
            if m
            else str(exc)
        )
        raise DataError(f"{path} is a fleet report of another version or damaged ({said})") from exc
    check_fields(rep, str(path))
    if rep.world_size < 1:
        raise DataError(f"{path} says {rep.world_size} ranks: damaged; measure again")
    # fewer ranks than the world is an interrupted run's report (it says so); more, or a rank
    # outside the world, is not one gpuselect wrote
    numbers = [r.rank for r in rep.ranks]
    if (
        len(numbers) > rep.world_size
        or len(set(numbers)) != len(numbers)
        or any(not 0 <= n < rep.world_size for n in numbers)
    ):
        raise DataError(
            f"{path} says {rep.world_size} ranks but holds ranks {sorted(numbers)[:10]}: damaged; measure again"
        )
    severities = {"ok", "info", "warning", "critical", "unknown"}
    for r in rep.ranks:
        if r.gpus_on_node < 0:
            raise DataError(f"{path}: rank {r.rank} says {r.gpus_on_node} GPUs on its node: damaged; measure again")
        for f in r.findings:
            if not isinstance(f, dict) or f.get("severity") not in severities:
                sev = str(f.get("severity") if isinstance(f, dict) else f)[:20]
                raise DataError(
                    f"{path}: rank {r.rank} has a finding of severity {sev!r} (not ok, info, warning, critical or unknown): "
                    "damaged; measure again"
                )
    for p in rep.bandwidth:
        if p.busbw_gbs < 0 or p.algbw_gbs < 0 or p.bytes <= 0:
            raise DataError(f"{path} reports a {p.op} of {p.bytes} B at {p.busbw_gbs} GB/s: damaged; measure again")
    from gpuselect.fleet.writers import to_markdown, to_text

    try:  # every field rendered once: one the types allow but the writers cannot use fails here, named
        to_text(rep)
        to_markdown(rep)
    except (KeyError, ValueError, TypeError, AttributeError, IndexError) as exc:
        raise DataError(
            f"{path} is a fleet report of another version or damaged ({type(exc).__name__}: {exc})"
        ) from exc
    return rep
