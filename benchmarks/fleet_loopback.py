"""Run `gpuselect fleet` under torchrun with Gloo over loopback on this machine and keep what it
printed: 2 ranks on one node, 4 ranks on one node, and 4 ranks as two torchrun "nodes" of two
(two agents on one host, so the inter-node path runs too).

    PYTHONPATH=. python benchmarks/fleet_loopback.py --out docs/validation/cpu-vm-2026-11-23/fleet \
        [--max-bytes 16M] [--repeats 5]

Each case writes CASE.txt (the command, its stdout and stderr without torchrun's banner),
CASE.json and CASE.md (the report); the 2x2 case also CASE.pdf. Last, estimate-interconnect.txt:
`gpuselect estimate` for VGG16 on A100 SXM4 80GB with and without `--interconnect` the 2x2
report (`--estimate-only` redoes just that from the saved report). On a shared 2-core VM the
figures are loopback copies between processes competing for two cores: they show the tool
works end to end, not what any network does.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clean(text: str) -> str:
    # torchrun's OMP_NUM_THREADS banner says nothing about the run.
    return "\n".join(
        ln
        for ln in text.splitlines()
        if "OMP_NUM_THREADS" not in ln and not ln.rstrip().endswith("*****") and not ln.rstrip().endswith("run.py:874]")
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-bytes", default="16M")
    ap.add_argument("--repeats", default="5")
    ap.add_argument("--estimate-only", action="store_true", help="only the estimate step, from a saved 2x2 report")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "GROUP_RANK")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    run = [sys.executable, "-m", "torch.distributed.run"]
    fleet = ["-m", "gpuselect", "fleet", "--max-bytes", args.max_bytes, "--repeats", args.repeats]
    cases = {
        "gloo-2ranks-1node": [["--nproc-per-node", "2", "--master-port", str(_port())]],
        "gloo-4ranks-1node": [["--nproc-per-node", "4", "--master-port", str(_port())]],
    }
    port = str(_port())
    cases["gloo-4ranks-2nodes"] = [
        [
            "--nnodes",
            "2",
            "--node-rank",
            str(n),
            "--nproc-per-node",
            "2",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            port,
        ]
        for n in (0, 1)
    ]
    for name, launches in ({} if args.estimate_only else cases).items():
        outputs = [["--output", str(args.out / f"{name}.json")]] + [[] for _ in launches[1:]]
        procs = []
        t0 = time.monotonic()
        for launch, extra in zip(reversed(launches), reversed(outputs), strict=True):  # other nodes first, node 0 last
            cmd = run + launch + fleet + extra
            procs.append(
                (
                    cmd,
                    subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
                )
            )
        texts = []
        for cmd, p in reversed(procs):
            out, err = p.communicate(timeout=900)
            texts.append(
                f"$ {' '.join(cmd[2:])}\n(exit {p.returncode})\n--- stdout\n{out}\n--- stderr\n{_clean(err)}\n"
            )
        took = time.monotonic() - t0
        (args.out / f"{name}.txt").write_text(
            f"# {name}: {took:.1f} s wall, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n\n" + "\n".join(texts)
        )
        report = args.out / f"{name}.json"
        if report.exists():
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import json,sys\nfrom gpuselect.fleet import writers\n"
                    "from gpuselect.fleet.model import report_from_dict\n"
                    "rep=report_from_dict(json.load(open(sys.argv[1]))['report'])\n"
                    "writers.write(rep, sys.argv[2])\n"
                    + ("writers.write(rep, sys.argv[3])\n" if "2nodes" in name else ""),
                    str(report),
                    str(args.out / f"{name}.md"),
                    str(args.out / f"{name}.pdf"),
                ],
                cwd=ROOT,
                env=env,
                check=True,
            )
        print(f"{name}: {took:.1f} s", flush=True)
    est = [
        sys.executable,
        "-m",
        "gpuselect",
        "estimate",
        "--workload",
        "vgg16",
        "--gpus",
        "nvidia-a100-sxm4-80gb",
        "--max-gpus",
        "16",
        "--top",
        "3",
    ]
    inter = ["--interconnect", str(args.out / "gloo-4ranks-2nodes.json")]
    texts = []
    for cmd in (est, est + inter):
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        texts.append(f"$ gpuselect {' '.join(cmd[3:])}\n(exit {p.returncode})\n{p.stdout}{p.stderr}")
    (args.out / "estimate-interconnect.txt").write_text("\n".join(texts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
