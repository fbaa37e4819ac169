"""``gpuselect report``: a hardware report (PDF, JSON or Markdown) a buyer or an admin can hand on."""

from __future__ import annotations

import argparse

HELP = "write a hardware report (PDF, JSON or Markdown): machine, health, benchmark, estimates and recommendation"


def configure(parser: argparse.ArgumentParser) -> None:
    from gpuselect.commands.estimate_options import add_estimate_options

    parser.add_argument(
        "--output",
        "-o",
        required=True,
        metavar="FILE",
        help="where to write the report (written atomically; - for standard output, Markdown unless --format)",
    )
    parser.add_argument(
        "--format", choices=("pdf", "json", "md"), default=None, help="default: from the file name, else pdf"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing file that gpuselect did not write (a report it wrote is replaced anyway)",
    )
    parser.add_argument(
        "--redact",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="leave out the host name, GPU serial numbers, UUIDs and the folders of your files "
        "(default: the settings' redact_reports)",
    )
    parser.add_argument(
        "--paper", choices=("a4", "letter"), default=None, help="default: from the locale (Letter in North America)"
    )
    add_estimate_options(
        parser,
        workload_required=False,
        no_bench_help="no benchmark section (the default unless --bench-quick or --bench FILE, which it excludes)",
    )


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from gpuselect.app.machine import this_machine
    from gpuselect.app.workflows import (
        build_machine_report,
        estimate_for_machine,
        load_workload,
    )
    from gpuselect.commands import estimate_options as opts
    from gpuselect.fsutil import check_output

    to_stdout = args.output == "-"
    if to_stdout:  # the usual name for standard output (a file named "-" was written)
        args.output, args.format = "/dev/stdout", args.format or "md"
    from gpuselect.report.writers import write

    inputs = tuple(getattr(args, k, None) for k in ("config", "bench", "interconnect", "model"))
    check_output(args.output, inputs=inputs, force=args.force)  # before any work: nothing is lost
    suffix = Path(args.output).suffix.lower()
    known = {".json": "json", ".md": "md", ".pdf": "pdf"}
    if args.format is None and suffix and suffix not in known:
        # A PDF was written into notes.txt: a suffix that names another format is asked about.
        from gpuselect.errors import UsageError

        raise UsageError(f"{args.output} ends in {suffix}: name it .pdf, .json or .md, or give --format")
    fmt = args.format or known.get(suffix, "pdf")
    settings = opts.user_settings()
    spec = opts.workload_spec(args)
    a = opts.assumptions(args, settings) if spec.given else None  # bad options fail before a benchmark runs
    machine = this_machine(bench=None if args.no_bench else opts.load_bench(args))
    for note in machine.bench_notes:
        print(f"gpuselect: {note}", file=sys.stderr)
    w = load_workload(spec) if spec.given else None
    if w is not None:
        for note in opts.option_notes(args, w, a):
            print(f"gpuselect: note: {note}", file=sys.stderr)
    result = estimate_for_machine(w, a, machine, gpu_ids=opts.gpu_ids(args)) if w is not None else None
    report = build_machine_report(machine, result, settings=settings, redact=args.redact)
    # Again, now: a file that appeared during the run (a benchmark takes a while) was replaced.
    check_output(args.output, inputs=inputs, force=args.force)

    def waiting(p: Path) -> None:  # a named pipe nobody reads yet: said, not a silent hang
        print(f"gpuselect: waiting for a reader on {p}…", file=sys.stderr, flush=True)

    path = write(report, args.output, fmt, paper=args.paper, on_wait=waiting)
    print(f"wrote the report ({fmt}) to standard output" if to_stdout else f"wrote {path} ({fmt})", file=sys.stderr)
    return 0
