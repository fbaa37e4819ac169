"""Wall time of `gpuselect report` without and with a quick benchmark (fresh processes).

Rerun:  PYTHONPATH=. python benchmarks/report_time.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gpuselect", "report", *args], check=True, env=env, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "r.pdf")
        print(f"hardware report, no benchmark: {run(['-o', out]):.2f} s")
        print(f"with an estimate (resnet50), no benchmark: {run(['-o', out, '--workload', 'resnet50']):.2f} s")
        print(
            f"with an estimate and --bench-quick: {run(['-o', out, '--workload', 'resnet50', '--bench-quick']):.2f} s"
        )


if __name__ == "__main__":
    main()
