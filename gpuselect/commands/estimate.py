"""``gpuselect estimate``: time, memory fit and cost of a workload on every catalog GPU."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gpuselect.commands import add_format_option
from gpuselect.commands.estimate_options import _number, add_estimate_options
from gpuselect.output import millions, plural
from gpuselect.types import Family
from gpuselect.workloads.model import sentence_start

HELP = "estimate training time, memory fit and cost on every catalog GPU, and recommend one of four stages"


def configure(parser: argparse.ArgumentParser) -> None:
    add_estimate_options(parser, workload_required=True)
    parser.add_argument(
        "--top",
        type=_number(int, 1, 100_000, "--top"),
        default=15,
        help="text output: single-GPU rows to show (default 15; the other lists a third, at least 3); the options the advice names are always shown",
    )
    add_format_option(parser, ("text", "json", "csv"))


def compute(args: argparse.Namespace, bench: object = None, settings: object = None):  # type: ignore[no-untyped-def]
    """The estimate the options describe, for this machine (the app layer's one workflow)."""
    from gpuselect.app.machine import this_machine
    from gpuselect.app.workflows import estimate_for_machine, load_workload
    from gpuselect.commands import estimate_options as opts

    settings = settings or opts.user_settings()
    w = load_workload(opts.workload_spec(args))
    a = opts.assumptions(args, settings)
    for note in opts.option_notes(args, w, a):
        print(f"gpuselect: note: {note}", file=sys.stderr)
    machine = this_machine(bench=bench)
    for note in machine.bench_notes:  # stderr: JSON and CSV on stdout stay clean
        print(f"gpuselect: {note}", file=sys.stderr)
    return estimate_for_machine(w, a, machine, gpu_ids=opts.gpu_ids(args))


def run(args: argparse.Namespace) -> int:
    import csv
    import dataclasses
    import io
    import json

    from gpuselect.app.money import MoneyFormat
    from gpuselect.commands import estimate_options as opts
    from gpuselect.estimate.memory import need_text, vram_text
    from gpuselect.estimate.parallel import describe_reference_networks
    from gpuselect.estimate.recommend import (
        BORROWED_BAND_NOTE,
        BUY_COST_NOTE,
        CLOUD_COST_NOTE,
        NO_OFFER_NOTE,
        PARTIAL_OFFER_NOTE,
        explain,
        fmt_hours,
        local_time,
        memory_need,
        named_options,
        owned_note,
        slower_precision_note,
        stage_heading,
    )
    from gpuselect.output import estimate_payload, json_document, round_money

    settings = opts.user_settings()
    result = compute(args, opts.load_bench(args), settings)
    w, a = result.workload, result.assumptions
    if args.format == "json":  # numbers in US dollars, as the core returns them
        print(json_document(estimate_payload(result), kind="estimate"))
        return 0
    if args.format == "csv":
        from gpuselect.estimate.api import EstimateRow

        fields = [f.name for f in dataclasses.fields(EstimateRow)]
        buf = io.StringIO()
        wr = csv.DictWriter(buf, fieldnames=fields)
        wr.writeheader()
        # this machine first (as the text and the report show it), in the catalog rows' columns:
        # gpu_id "local:<device>", its basis as the note
        local = [
            {
                **{k: v for k, v in dataclasses.asdict(loc).items() if k in fields},
                "gpu_id": f"local:{loc.device}",
                "count": 1,
                "note": loc.basis,
                "meets_deadline": loc.meets_deadline,  # None (unknown) is an empty cell, as JSON's null
            }
            for loc in result.local
        ]
        for r in [*local, *result.rows]:
            # costs to the cent as JSON has them (a cell read 389.77231575252597 beside JSON's 389.77)
            row = round_money(r if isinstance(r, dict) else dataclasses.asdict(r))
            row["suggestions"] = "; ".join(row.get("suggestions") or [])
            # nested figures (memory and time breakdowns) as JSON in their cell, not Python reprs
            row = {
                k: json.dumps(v, sort_keys=True) if isinstance(v, (dict, list, tuple)) else v for k, v in row.items()
            }
            wr.writerow(row)
        print(buf.getvalue(), end="")
        return 0
    money = MoneyFormat.from_settings(settings)
    rec = result.recommendation
    choice, why = explain(rec, money)
    print(
        f"{sentence_start(w.name)}: {millions(w.params)} parameters, {_gflop(w.training_flops_per_sample)} per sample to train, "
        f"{data_scope(w, a)}; "
        f"{a.precision}, {a.optimizer}, deadline {fmt_hours(a.deadline_hours)}"
        + (f", budget {money(a.budget_usd)}" if a.budget_usd else "")
        + f", electricity {money.per_kwh(a.electricity_usd_per_kwh)}"
    )
    if w.id.startswith("config:"):  # what the config was read as, so a wrong guess shows
        print(f"Model: {w.description}")
    # one GPU each (--count 1, --max-gpus 1): no links to describe; a 1x MI250X trains over its 2 dies
    if any(r.count * r.dies > 1 for r in result.rows):
        between = f"{a.network_gbs:g} GB/s per node" if a.network_gbs is not None else describe_reference_networks()
        spans = any(r.count * r.dies > a.gpus_per_node for r in result.rows)
        print(
            "Several GPUs: "
            + (
                # a measurement within one node leaves the rows over several nodes on the spec network
                a.interconnect.describe()
                + (f"; between nodes (not measured) {between}" if spans and not a.interconnect.across_nodes else "")
                if a.interconnect
                else "spec link bandwidths (" + _link_kinds(result.rows) + "); between nodes " + between
            )
        )
    print(f"\n{stage_heading(rec)}: {choice}\n{why}\n")
    left_out = {x.split(" ", 1)[0] for x in rec.excluded}
    for loc in result.local:
        out = loc.device in left_out
        state = "left out of the plan (critical health finding)" if out else local_time(loc)
        if loc.peak_memory_gb is not None and loc.vram_gb:  # "will it fit my card?"
            state += f"; {memory_need(loc, verdict=out)}"  # local_time says whether it fits
        print(f"Your machine, {loc.device} ({loc.name}): {state}")
    if rec.own and int(rec.own["count"]) > 1:
        print(
            f"Your {rec.own['count']}x {rec.own['name']} together: {fmt_hours(rec.own['total_time_h'])}"
            f" (±{100 * float(rec.own['error_band']):.0f} %; electricity {money(rec.own['cost_usd'])})"
        )
    # Cards today's frameworks no longer run (Kepler ...) after the rest: never the top of a list.
    ok = sorted(
        (r for r in result.rows if r.fits and r.total_time_h is not None),
        key=lambda r: (not r.supported, r.total_time_h),
    )
    sym = money.symbol
    shown: list[Any] = []
    paged = unlinked = partial = slower_prec = False
    owned_mark = 0  # the most of the user's own cards a printed row's buy cost leaves out (footnote)
    picks = {(o.get("gpu_id"), o.get("count")) for o in named_options(rec)}
    marked = False  # the footnote explains → only where a printed row carries it
    for title, rows in (
        ("Single GPUs, fastest first", [r for r in ok if r.count == 1]),
        ("Several GPUs", [r for r in ok if r.count > 1 and r.count * r.dies <= a.gpus_per_node]),
        (f"Clusters (nodes of {a.gpus_per_node})", [r for r in ok if r.count * r.dies > a.gpus_per_node]),
    ):
        if not rows:
            continue
        rate = "tokens/s" if w.tokens_per_sample else "samples/s"
        print(
            f"\n{title}:\n{'option':34s} {'batch':>6s} {'memory GB':>11s} {rate:>11s} {'prec':>9s} {'par':>5s} {'bound':>13s} "
            f"{'time':>9s} {'±':>5s}  {'buy ' + sym:>9s} {'cloud ' + sym:>9s} {'kWh':>8s}"
        )
        top = rows[: args.top if title.startswith("Single") else max(3, args.top // 3)]
        # The options the advice names are always printed (after the top ones, where not among
        # them), marked, so the pick's batch, memory, bound and band are on screen.
        named = [r for r in rows if (r.gpu_id, r.count) in picks and r not in top]
        for r in top + named:
            shown.append(r)
            mem = (
                f"{need_text(r.peak_memory_gb, r.vram_gb)}/{vram_text(r.vram_gb)}"
                if r.peak_memory_gb is not None and r.vram_gb
                else "—"
            )
            if "paging" in r.time_breakdown_s:
                mem += "+"  # part of a paged optimizer's state lives in host memory (footnote)
                paged = True
            speed = (r.tokens_per_s if w.tokens_per_sample else r.throughput_samples_per_s) or 0
            marked = marked or (r.gpu_id, r.count) in picks
            label = ("→ " if (r.gpu_id, r.count) in picks else "") + f"{r.count}x {r.name}"
            cloud = money(r.cloud_cost_usd)
            if r.cloud_unlinked:  # "—" read as no price data at all (footnote)
                cloud, unlinked = "no offer", True
            elif r.cloud_offer_gpus and r.cloud_cost_usd is not None:
                cloud += "‡"  # the rate is per GPU of a larger offer (footnote)
                partial = True
            buy = money(r.buy_cost_usd)
            if r.owned and r.buy_cost_usd is not None:
                buy += "§"  # the cards the user owns are not in it: "$1.76" read as an RTX 3090's price
                owned_mark = max(owned_mark, r.owned)
            prec = str(r.precision_used or "—")
            if r.faster_precision:
                prec += "†"  # another precision trains this option faster (footnote)
                slower_prec = True
            print(
                f"{label if len(label) <= 34 else label[:33] + '…':34s} {r.batch_size or 0:6d} {mem:>11s} {speed:11,.0f} {prec:>9s} "
                f"{r.parallelism:>5s} {r.bound or '—':>13s} "
                f"{fmt_hours(r.total_time_h):>9s} {100 * r.error_band:4.0f}%{'*' if r.band_note else ' '} {buy:>9s} {cloud:>9s} {r.energy_kwh or 0:8,.1f}"
                + ("" if r.meets_deadline else "  (misses deadline)")
                + ("" if r.supported else "  (not supported by today's frameworks)")
            )
    from gpuselect.estimate.api import borrowed_band_paths

    paths = borrowed_band_paths(shown)  # the rows printed
    if paths:
        print(f"\n* no measured step validates {', '.join(paths)}: {BORROWED_BAND_NOTE} (docs/accuracy.md)")
    if paged:
        print(
            "\n+ over the card's memory: the paged optimizer keeps the rest of its state in host memory, "
            "paged in and out every step (counted in the time)"
        )
    if unlinked:
        print(f"\nno offer: {NO_OFFER_NOTE} (the row's note in --format json names the offer)")
    if slower_prec:  # one request has one faster precision: bf16 beside fp8, fp32 beside fp16/bf16
        for faster in sorted({str(r.faster_precision) for r in shown if r.faster_precision}):
            print(f"\n† {slower_precision_note(faster)}; the row's note in --format json says by how much")
    if partial:
        print(f"\n‡ {PARTIAL_OFFER_NOTE}")
    if owned_mark:
        print(f"\n§ {owned_note(owned_mark)}")
    misfits = [r for r in result.rows if not r.fits and r.peak_memory_gb is not None]
    if misfits and len({r.gpu_id for r in result.rows}) <= 3:  # the user named the cards: say why each does not fit
        print("\nDoes not fit:")
        for r in misfits:
            tip = f"; try {r.suggestions[0]}" if r.suggestions else ""
            print(f"{r.count}x {r.name}: {r.note}{tip}")
    print(
        f"\n{len(ok)} of {len(result.rows)} options fit. ± is the error band of each row's "
        "regime (small overhead-bound models, CNNs, transformers, LLMs on one or many GPUs, AMD), wide enough to cover "
        "80 % of that regime's validation cases (docs/accuracy.md); a time's range is time ÷ (1 + band) to time × "
        f"(1 + band).{' → marks the options the advice names.' if marked else ''} Rates are for the whole option; `bound` says what "
        f"limits a step. kWh and running costs count the GPUs' power (TDP x {a.utilisation:g}), not the host's; "
        f"{BUY_COST_NOTE}. "
        + (
            f"{CLOUD_COST_NOTE[0].upper()}{CLOUD_COST_NOTE[1:]}. "
            if any(r.cloud_cost_usd is not None for r in shown)
            else ""
        )
        + "`--format json` has every row with its per-step time breakdown and what would make a GPU fit."
    )
    return 0


def _link_kinds(rows: Any) -> str:
    """The links the listed cards use, in their vendors' words (AMD's Infinity Fabric is no NVLink)."""
    amd = {r.family in (Family.RADEON, Family.INSTINCT) for r in rows if r.count * r.dies > 1}
    return ", ".join(["NVLink"] * (False in amd) + ["Infinity Fabric"] * (True in amd) + ["PCIe"])


def data_scope(w: Any, a: Any) -> str:
    """The samples and epochs every time covers, and where each figure came from: a time means
    nothing without them, and for a model given by its size they are a guess (100,000 x 10)."""
    n, e = a.dataset_size or w.default_dataset_size, a.epochs or w.default_epochs
    text = f"{plural(n, 'sample')} \u00d7 {plural(e, 'epoch')}"
    unset = [opt for opt, v in (("--dataset-size", a.dataset_size), ("--epochs", a.epochs)) if v is None]
    if not unset:
        return text + " (as given)"
    whose = (
        "the custom default"
        if w.id == "custom"
        else "the config default"
        if str(w.id).startswith("config:")
        else "the workload's own"
    )
    which = "" if len(unset) == 2 else ("samples: " if unset[0] == "--dataset-size" else "epochs: ")
    return f"{text} ({which}{whose}; set {'/'.join(unset)})"


def _gflop(flops: float) -> str:
    """GFLOP to three significant digits, as the workload's description and the report write them
    (its own rule printed "3e-06 GFLOP" for a small model of own figures)."""
    from gpuselect.output import three_digits

    return f"{three_digits(flops / 1e9)} GFLOP"
