"""The application layer is core: it imports neither Qt nor torch, and no face imports another."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_app_layer_imports_neither_qt_nor_torch() -> None:
    code = (
        "import gpuselect.app.workflows, gpuselect.app.machine, gpuselect.app.money, gpuselect.estimate.recommend, "
        "gpuselect.report.model, gpuselect.commands.report, gpuselect.commands.estimate\n"
        "import sys, json\nprint(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert not {m for m in loaded if m.split(".")[0] in ("PySide6", "torch", "pyqtgraph", "reportlab")}


def test_no_face_imports_another() -> None:
    import re

    report_cmd = (REPO_ROOT / "gpuselect" / "commands" / "report.py").read_text()
    assert not re.search(r"commands(\.| import )estimate\b(?!_)", report_cmd)
    page = (REPO_ROOT / "gpuselect" / "gui" / "pages" / "estimate.py").read_text()
    assert "gpuselect.commands" not in page
