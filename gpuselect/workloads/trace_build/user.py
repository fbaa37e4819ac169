"""Child process of ``--model FILE --factory NAME``: import the user's file (RUNS ITS CODE), trace
one training step of ``NAME()`` on the meta device and write the traces as JSON to ``--out``.

Run by ``gpuselect.workloads.profile.trace_user_model`` in a subprocess with a time limit, so a
print, a crash or a ``sys.exit`` in the user's code cannot corrupt or end gpuselect's own run.
Exit status: 0 written; 3 the file failed to import; 4 no such factory; 5 tracing failed.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
import traceback
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("file")
    ap.add_argument("factory")
    ap.add_argument("shape")
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-memory-gb", type=float, default=0.0, help="cap this process's memory (0: none)")
    args = ap.parse_args(argv)
    if args.max_memory_gb > 0:
        _cap_memory(args.max_memory_gb)
    shape = tuple(int(d) for d in args.shape.split(","))
    p = Path(args.file)
    spec = importlib.util.spec_from_file_location(f"gpuselect_user_model_{p.stem}", p)
    if spec is None or spec.loader is None:
        # a config.json given to --model: say where it goes
        also = "; a Hugging Face config.json goes with --config" if p.suffix.lower() == ".json" else ""
        print(f"cannot load {p} as a Python module{also}", file=sys.stderr)
        return 3
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the user's code: report it in one line
        if _out_of_memory(exc):
            print(
                f"{p} ran out of the {args.max_memory_gb:g} GB the trace may use while it was imported", file=sys.stderr
            )
        else:
            print(f"{p} failed to import: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3
    factory = getattr(module, args.factory, None)
    if not callable(factory):
        print(f"{p} has no function {args.factory!r}", file=sys.stderr)
        return 4
    from gpuselect.workloads.trace_build.meta import NotTrainableError, trace_module
    from gpuselect.workloads.traces import trace_to_dict

    source = (
        f"meta-device trace of {args.factory}() from {p} (one step: forward, a mean-squared loss on its "
        "output, backward)"
    )
    try:
        plain, ckpt = trace_module(factory, shape, loss="mse", labels_per_sample=0, source=source)
    except NotTrainableError as exc:
        print(f"{args.factory}() from {p} cannot be traced: {exc}", file=sys.stderr)
        return 5
    except Exception as exc:  # noqa: BLE001 - the user's model: report it
        if _out_of_memory(exc):
            print(
                f"tracing {args.factory}() from {p} ran out of the {args.max_memory_gb:g} GB it may use",
                file=sys.stderr,
            )
            return 5
        # a token model (an embedding first) wants integer inputs: try those before giving up
        import torch

        try:
            plain, ckpt = trace_module(
                factory, shape, torch.long, loss="mse", labels_per_sample=0, source=source + "; integer (token) inputs"
            )
        except Exception:  # noqa: BLE001 - report the first failure, the one with float inputs
            traceback.print_exception(exc, file=sys.stderr)
            # what the trace gave forward: a model that takes a dict or several inputs fails inside
            # it with a message about indexing ("new(): invalid data type 'str'") that names neither
            given = ", ".join(str(d) for d in (2, *shape))
            print(
                f"tracing {args.factory}() from {p} failed: {type(exc).__name__}: {exc} (the trace builds the model "
                f"and calls its forward with one tensor of shape ({given}): floats, then token ids)",
                file=sys.stderr,
            )
            return 5
    Path(args.out).write_text(
        json.dumps({"plain": trace_to_dict(plain), "ckpt": trace_to_dict(ckpt)}), encoding="utf-8"
    )
    return 0


def _out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation the memory cap refused: Python's MemoryError, or torch's
    own (a RuntimeError "[enforce fail at alloc_cpu.cpp:127] ... DefaultCPUAllocator: can't
    allocate memory", which was shown to the user as it came)."""
    return isinstance(exc, MemoryError) or (isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc))


def _cap_memory(gb: float) -> None:
    """Bound what the user's code may allocate (a file that allocates in a loop took the machine
    past 11 GB before the kernel killed it): the data segment and private mappings, where
    allocations land; the address space torch reserves for its libraries stays free."""
    try:
        import resource
    except ImportError:  # not on Windows: the time limit still holds
        return
    limit = int(gb * 1024**3)
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    with contextlib.suppress(ValueError, OSError):  # a container that forbids it: the time limit holds
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


if __name__ == "__main__":
    sys.exit(main())
