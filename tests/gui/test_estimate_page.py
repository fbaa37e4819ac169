"""The Estimate page's flows: advice on simulated one- and two-GPU machines, one currency
everywhere, custom workloads (config.json with LoRA, a model file), charts that fit their panes,
hover text that follows the workload, the memory bar, and a GUI thread that never waits."""

from __future__ import annotations

import itertools
import json
import math
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint, Qt

from gpuselect.gui.pages.estimate import EstimatePage
from gpuselect.hardware.snapshot import detect
from gpuselect.settings import Settings
from gpuselect.workloads.presets import PRESETS
from tests.fakes import fake_nvml as F


def _page(qtbot, scenario: str | None = None, preset: str = "resnet50") -> EstimatePage:  # type: ignore[no-untyped-def]
    page = EstimatePage()
    qtbot.addWidget(page)
    if scenario:
        page.local_snapshot = detect(nvml=F.SCENARIOS[scenario](), probe=False)
    page.presets.setCurrentRow(list(PRESETS).index(preset))
    return page


def _run(qtbot, page: EstimatePage, timeout_ms: int = 30_000) -> None:  # type: ignore[no-untyped-def]
    before = page.result
    page.recompute()
    qtbot.waitUntil(lambda: page.result is not before and page.worker is None, timeout=timeout_ms)


def test_one_rtx3090_that_is_enough(qtbot) -> None:
    page = _page(qtbot, "rtx3090")
    _run(qtbot, page)
    text = page.recommendation.text()
    assert "You already have what you need: your GeForce RTX 3090" in text and "to buy" not in text
    page.shutdown()


def test_two_a100_with_an_ecc_fault(qtbot) -> None:
    page = _page(qtbot, "a100x2_ecc")
    _run(qtbot, page)
    text = page.recommendation.text()
    assert "Left out of the plan: gpu1" in text and "ECC" in text
    assert "your gpu1: left out" in text
    assert page.result.recommendation.own["count"] == 1
    page.shutdown()


def test_currency_everywhere(qtbot) -> None:
    page = _page(qtbot, "rtx3090", "llama-8b-qlora")
    page.apply_settings(Settings(currency_symbol="€", usd_to_currency=0.5, electricity_usd_per_kwh=0.2))
    _run(qtbot, page)
    assert page.electricity.prefix() == "€" and page.electricity.value() == pytest.approx(0.1)
    assert page.result.assumptions.electricity_usd_per_kwh == pytest.approx(0.2)  # the core still gets US dollars
    verdict = page.recommendation.text()
    assert "€" in verdict and "$" not in verdict
    buy_col = [page.model.headerData(i, Qt.Orientation.Horizontal) for i in range(page.model.columnCount())].index(
        "Buy"
    )
    cells = [page.proxy.index(i, buy_col).data() for i in range(page.proxy.rowCount())]
    assert any(c.startswith("€") for c in cells) and not any("$" in c for c in cells)
    assert page.scatter_plot.getAxis("left").labelText == "cost (€)"
    labels = [i.toPlainText() for i in page.stage_plot.getPlotItem().items if hasattr(i, "toPlainText")]
    assert any("€" in t for t in labels) and not any("$" in t for t in labels)
    row = next(r for r in page.result.rows if r.fits and r.cloud_cost_usd)
    page._on_hover(None, [SimpleNamespace(data=lambda: (row, "rent"))])
    assert "€" in page.hover.text() and "$" not in page.hover.text()
    page.shutdown()


def test_a_buy_cost_that_leaves_out_the_users_own_card_is_marked_as_in_the_cli(qtbot) -> None:
    """The CLI's and the report's tables mark such a cost "§" with what it means; the app's table
    showed the RTX 3090 the user owns at its electricity alone, unmarked, as if that were its price."""
    from gpuselect.estimate.recommend import owned_note

    page = _page(qtbot, "rtx3090", "llama-8b-qlora")
    _run(qtbot, page)
    buy = next(i for i, c in enumerate(page.model.columns) if c.header == "Buy")
    cells = {(r.gpu_id, r.count, r.owned): page.model.index(i, buy) for i, r in enumerate(page.model.rows)}
    own = [ix for (_, _, owned), ix in cells.items() if owned]
    bought = [ix for (_, _, owned), ix in cells.items() if not owned and ix.data() != "—"]
    assert own and bought
    for ix in own:
        assert ix.data().endswith(" §")
        assert owned_note(1) in " ".join(ix.data(Qt.ItemDataRole.ToolTipRole).split())
    assert not any("§" in ix.data() for ix in bought)
    # sorted by the cost, as before: the mark does not make it text
    page.table.sortByColumn(buy, Qt.SortOrder.AscendingOrder)
    rows = [page.model.rows[page.proxy.mapToSource(page.proxy.index(i, 0)).row()] for i in range(page.proxy.rowCount())]
    costs = [r.buy_cost_usd for r in rows if r.buy_cost_usd is not None]
    assert costs == sorted(costs)
    page.shutdown()


def test_hover_follows_the_current_workload(qtbot) -> None:
    page = _page(qtbot)
    _run(qtbot, page)
    old = next(r for r in page.result.rows if r.fits and r.cloud_cost_usd)
    page.presets.setCurrentRow(list(PRESETS).index("bert_base_squad"))
    _run(qtbot, page)
    assert "Hover" in page.hover.text()  # cleared for the new workload
    page._on_hover(None, [SimpleNamespace(data=lambda: (old, "rent"))])
    assert "Hover" in page.hover.text()  # a point of the earlier workload says nothing
    new = next(r for r in page.result.rows if r.fits and r.cloud_cost_usd)
    page._on_hover(None, [SimpleNamespace(data=lambda: (new, "rent"))])
    assert page.result.workload.name in page.hover.text()
    page.shutdown()


def test_inputs_show_the_workloads_real_values_and_small_jobs_read_in_minutes(qtbot) -> None:
    page = _page(qtbot, None, "mnist-mlp")
    w = PRESETS["mnist-mlp"]
    assert page.dataset.value() == w.default_dataset_size and page.epochs.value() == w.default_epochs
    _run(qtbot, page)
    assert "0.0 h" not in page.recommendation.text()
    assert any(u in page.recommendation.text() for u in (" s", " min"))
    page.presets.setCurrentRow(list(PRESETS).index("resnet50"))
    assert page.dataset.value() == PRESETS["resnet50"].default_dataset_size
    page.shutdown()


def test_a_config_json_with_lora(qtbot, tmp_path: Path) -> None:
    cfg = tmp_path / "my-model" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 2048,
                "num_hidden_layers": 16,
                "num_attention_heads": 32,
                "intermediate_size": 8192,
                "vocab_size": 32000,
                "max_position_embeddings": 2048,
            }
        )
    )
    page = _page(qtbot)
    page.source.setCurrentIndex(1)
    page.config_path.setText(str(cfg))
    page.mode.setCurrentText("lora")
    _run(qtbot, page)
    w = page.result.workload
    assert w.mode == "lora" and "my-model" in w.name and w.trainable_params < w.params / 10
    assert page.dataset.value() == w.default_dataset_size  # the real figure, once the config was read
    page.config_path.setText(str(tmp_path / "missing.json"))
    _run_fail = page.result
    page.recompute()
    qtbot.waitUntil(lambda: "Cannot estimate" in page.error.text(), timeout=20_000)
    assert page.result is _run_fail
    # the answer on screen is the last valid input's: greyed out, not left looking current
    assert not page.recommendation.isEnabled() and not page.views.isEnabled()
    # the charts too: a disabled plot draws as before, so it is faded (QA 14)
    assert all(p.graphicsEffect() is not None for p in (page.stage_plot, page.scatter_plot))
    page.config_path.setText(str(cfg))
    _run(qtbot, page)
    assert page.recommendation.isEnabled() and page.views.isEnabled()
    assert all(p.graphicsEffect() is None for p in (page.stage_plot, page.scatter_plot))
    page.shutdown()


def test_the_window_says_what_a_config_was_read_as(qtbot, tmp_path: Path) -> None:
    """The CLI's "Model:" line and the report carry the description's caveats (an unchecked model
    type, the MoE's active share, sliding windows); the window showed the estimate without them."""
    cfg = tmp_path / "odd<name>.json"
    cfg.write_text(
        json.dumps(
            {
                "model_type": "smollm3",
                "hidden_size": 512,
                "num_hidden_layers": 2,
                "num_attention_heads": 8,
                "intermediate_size": 1024,
                "vocab_size": 1000,
                "max_position_embeddings": 1024,
                "hidden_act": "silu",
            }
        )
    )
    page = _page(qtbot)
    page.source.setCurrentIndex(1)
    page.config_path.setText(str(cfg))
    page.mode.setCurrentText("lora")
    _run(qtbot, page)
    w = page.result.workload
    said = page.workload_info.text()
    assert w.description in said and "model type 'smollm3' is not one gpuselect has checked" in said
    assert said.startswith(f"{w.params / 1e6:,.1f} M parameters (") and "trained)" in said
    assert page.workload_info.isEnabled()
    page.config_path.setText(str(tmp_path / "missing.json"))
    page.recompute()
    qtbot.waitUntil(lambda: "Cannot estimate" in page.error.text(), timeout=20_000)
    assert not page.workload_info.isEnabled()  # the last valid input's, greyed with the answer
    page.shutdown()


def test_a_model_file_is_profiled_in_the_worker(qtbot, tmp_path: Path) -> None:
    model = tmp_path / "net.py"
    model.write_text(
        "import torch.nn as nn\n\ndef build():\n    return nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))\n"
    )
    page = _page(qtbot)
    page.source.setCurrentIndex(2)
    page.model_path.setText(str(model))
    page.factory.setText("build")
    page.input_shape.setText("64")
    _run(qtbot, page, 120_000)  # imports torch to measure the model (in a subprocess once traced), slow on a loaded VM
    assert (
        page.result.workload.name.startswith("build from")
        and "net.py" in page.result.workload.name
        and page.result.workload.params == 64 * 32 + 32 + 32 * 10 + 10
    )
    page.input_shape.setText("sixty")
    page.recompute()
    assert "input shape" in page.error.text()
    page.shutdown()


def test_a_model_file_that_never_returns_is_stopped_when_the_page_closes(qtbot, tmp_path: Path) -> None:
    # Quit during such a trace left the window up for the trace's 60 s limit, and the page said
    # "--model needs --factory and --input-shape" all along, both fields filled.
    model = tmp_path / "loop.py"
    model.write_text("def make():\n    while True:\n        pass\n")
    page = _page(qtbot)
    page.source.setCurrentIndex(2)
    page.model_path.setText(str(model))
    page.recompute()
    assert "factory function" in page.error.text() and page.worker is None  # waits for the rest
    page.factory.setText("make")
    page.input_shape.setText("1,28,28")
    page.recompute()
    assert page.worker is not None and page.error.text().startswith("Measuring the model")
    from gpuselect.workloads import profile

    qtbot.waitUntil(lambda: len(profile._LIVE) == 1, timeout=20_000)
    t0 = time.perf_counter()
    page.shutdown()
    assert page.worker is None or page.worker._thread.isFinished()  # shutdown waited for it
    assert time.perf_counter() - t0 < 15 and not profile._LIVE


def test_the_gui_thread_never_waits_for_an_estimate(qtbot) -> None:
    page = _page(qtbot, "h100x8")
    t0 = time.perf_counter()
    page.recompute()
    assert time.perf_counter() - t0 < 0.2 and page.worker is not None and page.result is None
    qtbot.waitUntil(lambda: page.result is not None, timeout=30_000)
    page.shutdown()


@pytest.mark.parametrize("size", [(1024, 700), (1600, 1000)])
def test_both_charts_fit_their_panes(qtbot, size: tuple[int, int]) -> None:
    page = _page(qtbot, "a100x2_ecc", "llama-8b-qlora")
    # Estimate first, then show: painting pyqtgraph on the GUI thread while the worker runs the
    # estimate stalled both threads in the clean-clone CI venv (py-spy: both idle; PySide6 6.11.3).
    _run(qtbot, page)
    page.resize(*size)
    page.show()
    qtbot.wait(50)
    for plot in (page.stage_plot, page.scatter_plot):
        assert plot.isVisible() and plot.width() >= 200 and plot.height() >= 180
        top_left = plot.mapTo(page, QPoint(0, 0))
        assert top_left.x() >= 0 and top_left.x() + plot.width() <= page.width()
        assert top_left.y() >= 0 and top_left.y() + plot.height() <= page.height()
    # every bar, whisker and the deadline lie inside the stage chart's range
    (x0, x1), _ = page.stage_plot.getViewBox().viewRange()
    per = [v for v in page.result.recommendation.per_stage.values() if v and v.get("total_time_h")]
    for v in per:
        for k in ("total_time_h", "time_low_h", "time_high_h"):
            assert x0 <= math.log10(float(v[k])) <= x1
    assert x0 <= math.log10(page.result.assumptions.deadline_hours) <= x1
    page.shutdown()


def test_memory_bar_shows_a_breakdown_when_the_row_has_one(qtbot) -> None:
    page = _page(qtbot)
    page.show()
    page._show_memory(SimpleNamespace(count=1, name="GeForce RTX 3090", vram_gb=24.0))  # no breakdown: no bar
    assert not page.memory_bar.isVisible()
    row = SimpleNamespace(
        count=1,
        name="GeForce RTX 4090",
        vram_gb=24.0,
        peak_memory_gb=16.2,
        memory_breakdown_gb={
            "weights": 5.0,
            "gradients": 0.1,
            "optimizer": 0.6,
            "activations": 8.0,
            "logits": 1.5,
            "overhead": 1.0,
        },
    )
    page._show_memory(row)
    assert page.memory_bar.isVisible() and "needs 16.2 of 24 GB" in page.memory_text.text()
    assert "activations: 8.0 GB" in page.memory_bar.toolTip()
    # an H100 is judged on the 79.65 GB its driver shows: "79.7 of 80" read as fitting
    page._show_memory(
        SimpleNamespace(**{**vars(row), "name": "H100 SXM5 80GB", "vram_gb": 79.65, "peak_memory_gb": 79.7})
    )
    assert "needs 79.7 of 79.65 GB per GPU" in page.memory_text.text()
    page.shutdown()


def test_a_palette_switch_redraws_the_charts_labels(qtbot) -> None:
    from PySide6.QtGui import QColor, QPalette
    from PySide6.QtWidgets import QApplication

    page = _page(qtbot)
    _run(qtbot, page)
    app = QApplication.instance()
    old = app.palette()
    dark = QPalette(old)
    dark.setColor(QPalette.ColorRole.Text, QColor(230, 230, 230))
    try:
        app.setPalette(dark)

        def relabelled() -> bool:
            texts = [i for i in page.stage_plot.getPlotItem().items if hasattr(i, "toPlainText")]
            return bool(texts) and all(t.color == QColor(230, 230, 230) for t in texts)

        qtbot.waitUntil(relabelled, timeout=5_000)
    finally:
        app.setPalette(old)
    page.shutdown()


def test_the_windows_last_benchmark_anchors_this_machine(qtbot) -> None:
    from gpuselect.bench.model import BenchReport, DeviceResult
    from gpuselect.gui.app import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.estimate.local_snapshot = snap = detect(nvml=F.rtx3090(), probe=False)
    # The engine names the CPU as detection does (bench/engine.py), which is how a result is known as this machine's.
    cpu_name = snap.cpu.model or "this CPU"
    w.bench.report = BenchReport([DeviceResult("cpu", cpu_name, "cpu", matmul_tflops={"fp32": 1.0})], True, "2.13")
    _run(qtbot, w.estimate)
    cpu = next(loc for loc in w.estimate.result.local if loc.device == "cpu")
    assert "measured" in cpu.basis and "unmeasured" not in cpu.basis
    # A run that ends re-estimates at once: the page showed the old figures until an input changed.
    faster = BenchReport([DeviceResult("cpu", cpu_name, "cpu", matmul_tflops={"fp32": 4.0})], True, "2.13")
    before = w.estimate.result
    w.bench._on_finished(faster)
    qtbot.waitUntil(lambda: w.estimate.result is not before and w.estimate.worker is None, timeout=30_000)
    again = next(loc for loc in w.estimate.result.local if loc.device == "cpu")
    assert again.throughput_samples_per_s is not None and cpu.throughput_samples_per_s is not None
    assert again.throughput_samples_per_s > cpu.throughput_samples_per_s
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=10_000)


def test_an_estimate_waits_while_a_benchmark_runs(qtbot) -> None:
    # Switching to Estimate during a benchmark ran an estimate beside it: the benchmark's
    # transformer steps came out 40x slow, and those figures then fed "your machine".
    from gpuselect.gui.app import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.estimate.local_snapshot = detect(nvml=F.rtx3090(), probe=False)
    running = [True]
    w.estimate.bench_running = lambda: running[0]
    w.estimate.recompute()
    assert w.estimate.worker is None and "Waiting for the benchmark" in w.estimate.error.text()
    running[0] = False
    before = w.estimate.result
    w.bench.report_ready.emit(None)  # the run ended
    qtbot.waitUntil(lambda: w.estimate.result is not before and w.estimate.worker is None, timeout=30_000)
    assert w.estimate.error.text() == ""
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=10_000)


def test_settings_page_takes_prices_in_the_currency(qtbot) -> None:
    from gpuselect.gui.pages.settings import SettingsPage

    page = SettingsPage()
    qtbot.addWidget(page)
    page.symbol.setText("€")
    page.rate.setValue(0.5)
    page.electricity.setValue(0.2)
    page.budget.setValue(1000)
    assert page.electricity.prefix() == "€" and page.budget.prefix() == "€"
    s = page.current()
    assert s.electricity_usd_per_kwh == pytest.approx(0.4) and s.default_budget_usd == pytest.approx(2000)
    page._show(s)
    assert page.electricity.value() == pytest.approx(0.2) and page.budget.value() == pytest.approx(1000)


def test_identical_local_gpus_share_one_mark_in_the_time_vs_cost_chart(qtbot) -> None:
    page = _page(qtbot, "h100x8")
    _run(qtbot, page)
    gpus = [loc for loc in page.result.local if loc.device != "cpu"]
    assert len(gpus) == 8 and len({loc.name for loc in gpus}) == 1
    labels = [
        i.label.toPlainText()
        for i in page.scatter_plot.getPlotItem().items
        if getattr(i, "label", None) is not None and i.label.toPlainText().startswith("your ")
    ]
    gpu_labels = [t for t in labels if t != "your cpu"]
    assert len(gpu_labels) == 1, labels
    assert gpu_labels[0].startswith("your 8\u00d7 ") and "H100" in gpu_labels[0]
    text = page.recommendation.text()  # the words say it once too
    assert "your 8\u00d7 H100" in text and "your gpu0" not in text and "your gpu7" not in text
    page.shutdown()


def test_checkpointing_choice_reaches_the_estimate_and_local_gpus_show_their_memory(qtbot) -> None:
    page = _page(qtbot, "h100x8", "llama-8b-lora")
    assert [page.checkpointing.itemText(i) for i in range(page.checkpointing.count())] == [
        "auto",
        "none",
        "selective",
        "full",
    ]
    page.show()
    page.checkpointing.setCurrentText("selective")
    _run(qtbot, page)
    assert page.result.assumptions.checkpointing == "selective"
    fitting = [r for r in page.result.rows if r.fits]
    assert fitting and all(r.checkpointing == "selective" for r in fitting)
    assert page.local_memory_bar.isVisible()
    text = page.local_memory_text.text()
    assert text.startswith("your 8\u00d7 H100 80GB HBM3 (each alone): needs") and "of your 80 GB" in text
    sel = next(loc for loc in page.result.local if loc.device == "gpu0").peak_memory_gb
    page.checkpointing.setCurrentText("full")
    _run(qtbot, page)
    full = next(loc for loc in page.result.local if loc.device == "gpu0").peak_memory_gb
    assert full < sel  # full checkpointing keeps less than selective
    page.shutdown()


def test_network_setting_reaches_the_cluster_rows(qtbot) -> None:
    """The GUI's network field is the CLI's --network-gbs: 0 (the default) means each card's
    reference node; a figure replaces it on the cluster rows the 70B preset brings."""
    page = _page(qtbot, "h100x8", "llama-70b-full")
    assert page.network.value() == 0 and page.network.specialValueText() == "card's reference node"
    _run(qtbot, page)
    assert page.result.assumptions.network_gbs is None
    sxm = "nvidia-h100-sxm5-80gb"  # NVLink in the box: the network is the slower link
    big = [r for r in page.result.rows if r.gpu_id == sxm and r.count > 8 and r.fits]
    assert big and all("400 GB/s per node (the card's reference node)" in (r.link_basis or "") for r in big)
    page.network.setValue(25)
    _run(qtbot, page)
    assert page.result.assumptions.network_gbs == 25
    big = [r for r in page.result.rows if r.gpu_id == sxm and r.count > 8 and r.fits]
    assert big and all("25 GB/s per node" in (r.link_basis or "") for r in big)
    page.shutdown()


def test_network_field_takes_a_fraction_of_a_gb_per_s(qtbot) -> None:
    """A 100 Gb/s NIC is 12.5 GB/s and 1 GbE 0.125: the field took whole numbers only, so 12.5
    reached the estimate as 12 and a sub-1 GB/s network could not be entered at all."""
    page = _page(qtbot)
    page.network.setValue(12.5)
    assert page.assumptions().network_gbs == 12.5
    page.network.setValue(0.5)
    assert page.assumptions().network_gbs == 0.5
    page.shutdown()


def test_loss_choice_reaches_the_rows_and_this_machines_gpus(qtbot) -> None:
    page = _page(qtbot, "h100x8", "llama-8b-lora")
    assert [page.loss.itemText(i) for i in range(page.loss.count())] == ["chunked", "plain"]
    page.checkpointing.setCurrentText("full")
    _run(qtbot, page)
    assert page.result.assumptions.loss == "chunked"
    chunked = next(loc for loc in page.result.local if loc.device == "gpu0").peak_memory_gb
    row = next(r for r in page.result.rows if r.gpu_id == "nvidia-h100-sxm5-80gb" and r.count == 1).peak_memory_gb
    page.loss.setCurrentText("plain")
    _run(qtbot, page)
    assert page.result.assumptions.loss == "plain"
    # A plain loss holds more at its backward (14 bytes per logit against 8): both figures grow.
    assert next(loc for loc in page.result.local if loc.device == "gpu0").peak_memory_gb > chunked
    assert (
        next(r for r in page.result.rows if r.gpu_id == "nvidia-h100-sxm5-80gb" and r.count == 1).peak_memory_gb > row
    )
    page.shutdown()


def test_sharding_and_offload_choices_reach_the_rows_and_the_advice(qtbot) -> None:
    """The GUI's sharding and offload are the CLI's --sharding / --offload: 70B QLoRA on two 24 GB
    cards fits no way the defaults allow, the advice names parameter offload, and choosing it fits."""
    page = _page(qtbot, None, "llama-70b-qlora")
    assert [page.sharding.itemText(i) for i in range(page.sharding.count())] == [
        "auto",
        "none",
        "zero1",
        "zero2",
        "fsdp",
    ]
    assert [page.offload.itemText(i) for i in range(page.offload.count())] == ["none", "optimizer", "params"]
    page.max_gpus.setCurrentText("2")
    _run(qtbot, page, 60_000)
    assert page.result.assumptions.sharding is None and page.result.assumptions.offload == "none"
    on_4090 = [r for r in page.result.rows if r.gpu_id == "nvidia-rtx-4090" and r.count == 2]
    assert on_4090 and not on_4090[0].fits and "offloading the parameters to CPU memory" in on_4090[0].suggestions[-1]
    page.offload.setCurrentText("params")
    _run(qtbot, page, 60_000)
    assert page.result.assumptions.offload == "params"
    r = next(r for r in page.result.rows if r.gpu_id == "nvidia-rtx-4090" and r.count == 2)
    assert r.fits and r.parallelism == "fsdp" and r.time_breakdown_s["offload"] > 0
    page.sharding.setCurrentText("zero2")  # keeps the parameters whole: offloading them needs FSDP
    qtbot.waitUntil(lambda: "needs them sharded" in page.error.text() and page.worker is None, timeout=60_000)
    page.offload.setCurrentText("optimizer")
    _run(qtbot, page, 60_000)
    assert page.result.assumptions.sharding == "zero2" and page.error.text() == ""
    page.shutdown()


def test_max_gpus_caps_every_option_as_the_cli_does(qtbot) -> None:
    """ "Max GPUs 1" still listed 32-GPU clusters (it was the box size only); auto keeps the CLI's
    default: boxes up to 8, clusters where no box holds the model or meets the deadline."""
    page = _page(qtbot, None, "llama-70b-full")
    assert page.max_gpus.currentText() == "auto"
    _run(qtbot, page, 60_000)
    assert max(r.count for r in page.result.rows) > 8
    page.max_gpus.setCurrentText("4")
    _run(qtbot, page, 60_000)
    assert page.result.assumptions.cluster_max_gpus == 4
    assert max(r.count * r.dies for r in page.result.rows) <= 4
    page.shutdown()


def test_a_new_preset_resets_the_batch_and_the_table_marks_the_pick_and_the_deadline(qtbot) -> None:
    page = _page(qtbot, preset="vgg16")
    page.batch.setValue(512)
    page.presets.setCurrentRow(list(PRESETS).index("llama-70b-full"))
    assert page.batch.value() == 0  # auto: VGG16's 512 would not fit a 70B model, and said nothing
    page.batch.setValue(64)
    page.batch.lineEdit().selectAll()
    page.batch.lineEdit().insert("Auto")  # typed, not stepped down to 0: it left the old value
    page.batch.interpretText()
    assert page.batch.value() == 0 and page.batch.text() == "auto"
    page.presets.setCurrentRow(list(PRESETS).index("resnet50"))
    _run(qtbot, page)
    cols = [page.model.headerData(i, Qt.Orientation.Horizontal) for i in range(page.model.columnCount())]
    gpu, deadline = cols.index("GPU"), cols.index("Deadline")
    cells = [
        (page.model.index(i, gpu).data(), page.model.index(i, deadline).data(), page.model.rows[i])
        for i in range(page.model.rowCount())
    ]
    starred = [r for name, _, r in cells if "★ recommended" in name]
    o = page.result.recommendation.option
    assert len(starred) == 1 and (starred[0].gpu_id, starred[0].count) == (o["gpu_id"], o["count"])
    assert {d for _, d, r in cells if r.fits and r.total_time_h} == {"meets", "misses"}
    assert all(d == ("meets" if r.meets_deadline else "misses") for _, d, r in cells if r.fits and r.total_time_h)
    page.shutdown()


def test_sorting_by_gpu_orders_each_card_by_count(qtbot) -> None:
    """Sorted as text the counts ran 1024x, 128x, 16x, 32x, 512x."""
    page = _page(qtbot, None, "llama-70b-full")
    page.deadline.setValue(1.0)  # no box in time: H100 clusters of 32, 64, 128
    _run(qtbot, page, 60_000)
    page.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    texts = [page.proxy.index(i, 0).data() for i in range(page.proxy.rowCount())]
    h100 = [int(t.split("x ", 1)[0]) for t in texts if t.split("x ", 1)[1].startswith("H100 SXM5 80GB")]
    assert len(h100) > 2 and h100 == sorted(h100)
    page.shutdown()


def test_the_advice_names_this_page_s_controls_not_command_line_options() -> None:
    from gpuselect.gui.wording import in_the_app

    hint = "Try to raise the GPU limit (--max-gpus), offload to CPU memory (--offload) or (--offload params: one GPU)"
    assert in_the_app(hint) == (
        "Try to raise the GPU limit (Max GPUs), offload to CPU memory (Offload) or (Offload set to params: one GPU)"
    )
    # review 17: a row's note read "Checkpointing selective trains 20 % faster here"
    said = "--checkpointing selective trains 20 % faster here"
    assert in_the_app(said) == "Checkpointing set to selective trains 20 % faster here"


def test_log_ticks_are_round_values_that_never_touch() -> None:
    """pyqtgraph labelled every 2-9 of a log axis and they ran together; fixed ticks set per chart
    missed the empty chart's default range and one-decade ranges."""
    from gpuselect.gui.plots import log_ticks, tick_text

    def width(text: str) -> float:
        return 7.0 * len(text)

    def texts(lo: float, hi: float, px: float) -> list[str]:
        return [t for _, t in log_ticks(lo, hi, px, width)[0]]

    assert texts(0.0, 2.0, 400) == ["2", "5", "10", "20", "50"]  # 1 and 100 sit on the ends
    assert texts(-1.2, 6.2, 400) == ["0.1", "1", "10", "100", "1,000", "10⁴", "10⁵", "10⁶"]
    assert texts(-0.3, 12.3, 245) == ["1", "100", "10⁴", "10⁶", "10⁸", "10¹⁰"]  # every 2nd decade
    assert texts(0.0, 1.0, 245) == ["2", "5"]  # an empty chart's default range
    assert texts(1.05, 1.65, 245) == ["20", "30", "40"]  # under a decade: every 1-9
    assert texts(0.2, 0.3, 245) == ["1.6", "1.8"]  # a tenth of one: round linear steps
    assert texts(6.1, 6.2, 245) == ["1.3e6", "1.4e6", "1.5e6"]
    batch = [math.log10(b) for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)]
    assert [t for _, t in log_ticks(-0.1, 3.1, 120, width, batch)[0]] == ["1", "8", "64", "512"]
    for lo in [x / 7 for x in range(-20, 20)]:
        for span in (0.05, 0.3, 0.9, 1.0, 1.1, 2.5, 4.0, 9.0, 30.0):
            for px in (120, 245, 600):
                labels = log_ticks(lo, lo + span, px, width)[0]
                assert labels, (lo, span, px)
                at = [((v - lo) * px / span, width(t)) for v, t in labels]
                for (a, wa), (b, wb) in itertools.pairwise(at):
                    assert b - a >= (wa + wb) / 2 + 6, (lo, span, px, labels)
                assert all(x - w / 2 >= -1 and x + w / 2 <= px + 1 for x, w in at)
                if px >= 245:
                    assert len(labels) >= 2, (lo, span, px, labels)
    assert tick_text(5e4) == "5e4" and tick_text(1e5) == "10⁵" and tick_text(0.5) == "0.5"


def _drawn_labels(axis) -> list[tuple[object, str]]:  # type: ignore[no-untyped-def]
    """The tick labels pyqtgraph would draw on ``axis``: (rectangle, text)."""
    from PySide6.QtGui import QImage, QPainter

    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    assert specs is not None
    return [(rect, text) for rect, _flags, text in specs[2] if text]


def _assert_readable(axis) -> None:  # type: ignore[no-untyped-def]
    labels = _drawn_labels(axis)
    assert labels, "no tick label at all"
    for i, (a, ta) in enumerate(labels):
        for b, tb in labels[i + 1 :]:
            assert not a.intersects(b), f"{ta!r} runs into {tb!r}: {[t for _, t in labels]}"  # type: ignore[attr-defined]


@pytest.mark.parametrize("span", [None, (0.0, 1.0), (-0.5, 0.6), (1.0, 1.53), (0.3, 1.4), (3.0, 12.0)])
def test_every_log_axis_draws_labels_that_do_not_run_together(qtbot, span: tuple[float, float] | None) -> None:
    """An empty log chart (pyqtgraph's default range) and ranges of about one decade."""
    from gpuselect.gui.plots import themed_plot

    plot = themed_plot(title="t", left="cost (KRW)", bottom="training time (h)")
    qtbot.addWidget(plot)
    plot.setLogMode(x=True, y=True)
    if span:
        plot.setXRange(*span, padding=0)
        plot.setYRange(*span, padding=0)
    plot.resize(300, 260)
    plot.show()
    qtbot.wait(50)
    for side in ("left", "bottom"):
        _assert_readable(plot.getAxis(side))
    assert "x1e" not in plot.getAxis("left").labelString()  # no SI factor beside whole values


@pytest.mark.parametrize(("preset", "max_gpus"), [("llama-70b-full", "auto"), ("llama-70b-full", "1")])
def test_the_estimate_charts_log_axes_are_readable_at_1024_px(qtbot, preset: str, max_gpus: str) -> None:
    """QA: labels ran together with llama-70b-full, and on the empty "no option" charts."""
    page = _page(qtbot, "a100x2_ecc", preset)
    page.max_gpus.setCurrentText(max_gpus)
    _run(qtbot, page, 60_000)
    page.resize(1024 - 20, 700)
    page.show()
    qtbot.wait(50)
    _assert_readable(page.stage_plot.getAxis("bottom"))
    _assert_readable(page.scatter_plot.getAxis("bottom"))
    _assert_readable(page.scatter_plot.getAxis("left"))
    page.shutdown()


@pytest.mark.parametrize(
    ("symbol", "rate", "budget_usd"),
    [("Fr.", 0.9, 1.0), ("CHF", 0.9, 50.0), ("KRW", 1350.0, 5000.0), ("KRW", 1350.0, 1e9)],
)
def test_the_budget_label_lies_wholly_inside_the_chart(qtbot, symbol: str, rate: float, budget_usd: float) -> None:
    """QA: the "budget" label was cut at the chart's edge in some currencies; a budget below every
    cost put it under the plot's bottom edge."""
    import pyqtgraph as pg

    page = _page(qtbot, "a100x2_ecc", "resnet50")
    page.apply_settings(Settings(currency_symbol=symbol, usd_to_currency=rate, default_budget_usd=budget_usd))
    _run(qtbot, page, 60_000)
    page.resize(1024 - 20, 700)
    page.show()
    qtbot.wait(50)
    view = page.scatter_plot.getViewBox().sceneBoundingRect()
    labels = [
        item.label
        for item in page.scatter_plot.getPlotItem().items
        if isinstance(item, pg.InfiniteLine) and item.angle == 0 and item.label.toPlainText() == "budget"
    ]
    assert len(labels) == 1 and view.contains(labels[0].sceneBoundingRect()), (labels[0].sceneBoundingRect(), view)
    page.shutdown()


@pytest.mark.parametrize("scatter_share", [0.5, 0.3])
def test_the_time_vs_cost_title_is_never_cut(qtbot, scatter_share: float) -> None:
    """QA: the title (which carries the chart's legend) was cut at 1024 px; it had 11 px to spare
    there, and none in a narrower pane. It drops words instead, the markers last."""
    page = _page(qtbot, "a100x2_ecc", "resnet50")
    _run(qtbot, page)
    page.resize(1024 - 20, 700)
    page.show()
    qtbot.wait(50)
    splitter = page.scatter_plot.parentWidget()
    total = sum(splitter.sizes())
    splitter.setSizes([round(total * (1 - scatter_share)), round(total * scatter_share)])
    qtbot.wait(50)
    item = page.scatter_plot.getPlotItem()
    label = item.titleLabel
    text = label.item.mapRectToScene(label.item.boundingRect())
    assert text.width() > 0 and text.right() <= page.scatter_plot.width(), (text, page.scatter_plot.width())
    assert item.getViewBox().sceneBoundingRect().right() <= page.scatter_plot.width()  # nor the plot cut
    assert "● buy" in label.text and "▲ rent" in label.text
    if scatter_share == 0.5:
        assert "Pareto" in label.text
    page.shutdown()


def test_the_core_s_offload_hint_reads_without_a_double_colon() -> None:
    """The parameter-offload tip says "(--offload params: one GPU, ..."; named as the control it read
    "Offload: params: one GPU"."""
    from gpuselect.estimate.memory import MemoryOptions, suggestions
    from gpuselect.gui.wording import in_the_app

    tips = suggestions(PRESETS["llama-70b-qlora"], 24.0, MemoryOptions(), 1, None)
    tip = next(in_the_app(t) for t in tips if t.startswith("offloading the parameters"))
    assert "(Offload set to params: one GPU, checkpointing" in tip and "--" not in tip
    assert not re.search(r"\w+: \w+:", tip)


def test_overhead_bound_advice_names_the_larger_batch_by_its_control(qtbot) -> None:
    """The core's larger-batch words reach the page, the option named as the page's control."""
    page = _page(qtbot, None, "simple-cnn")
    page.dataset.setValue(2_000_000_000)
    page.deadline.setValue(100.0)
    _run(qtbot, page)
    lb = page.result.recommendation.larger_batch
    assert lb is not None and lb["batch_size"] == 1024
    text = page.recommendation.text()
    assert "A larger per-GPU batch (Batch size 1024) keeps one GPU busy" in text and "--batch-size" not in text
    page.shutdown()


def test_a_long_note_cell_shows_its_full_text_on_hover(qtbot) -> None:
    """QA 14c: the Note column ("a tight fit: 47.5 of 48 GB, ...") was cut off at the view's edge and
    hovering a cell showed nothing."""
    page = _page(qtbot, None, "llama-8b-full")
    _run(qtbot, page, 60_000)
    cols = [page.model.headerData(i, Qt.Orientation.Horizontal) for i in range(page.model.columnCount())]
    note = cols.index("Note")
    long_notes = [
        (text, page.model.index(i, note).data(Qt.ItemDataRole.ToolTipRole))
        for i in range(page.model.rowCount())
        if len(text := page.model.index(i, note).data()) > 40  # wider than the column is likely to be
    ]
    assert long_notes and any("tight fit" in text for text, _ in long_notes)
    assert all(tip and " ".join(tip.split()) == " ".join(text.split()) for text, tip in long_notes)
    assert all(max(map(len, tip.splitlines())) <= 100 for _, tip in long_notes)  # wrapped, not one screen-wide line
    vram = cols.index("VRAM")  # a number keeps its column's explanation
    assert page.model.index(0, vram).data(Qt.ItemDataRole.ToolTipRole) == page.model.columns[vram].tooltip
    page.shutdown()


def test_the_vram_column_reads_a_card_s_memory_as_every_other_face(qtbot) -> None:
    """QA 15d: the table's VRAM read "179 GB" for a B200 beside its note's "the driver shows 179.06
    of its 180 GB" and the memory line's "of 179.06 GB"; an H100's 79.65 read "80 GB", an A10's
    ECC-on 22.5 read "22 GB"."""
    page = _page(qtbot, None, "resnet50")
    _run(qtbot, page)
    cols = [page.model.headerData(i, Qt.Orientation.Horizontal) for i in range(page.model.columnCount())]
    gpu, vram = cols.index("GPU"), cols.index("VRAM")
    cells = {
        page.model.index(i, gpu).data().split("  ★")[0]: page.model.index(i, vram).data()
        for i in range(page.model.rowCount())
    }
    assert cells["1x B200"] == "179.06 GB"
    assert cells["1x H100 SXM5 80GB"] == "79.65 GB"
    assert cells["1x A10"] == "22.5 GB"
    assert cells["1x B300"] == "288 GB"
    page.memory_bar.set_parts({"weights": 1.0}, 179.06)
    assert page.memory_bar.toolTip().endswith("VRAM: 179.06 GB")
    page.shutdown()


def test_each_option_says_the_precision_it_trains_in_and_marks_a_slower_fp8(qtbot) -> None:
    """QA 15d: the CLI's table has a "prec" column (fp16 on a V100 under auto, fp8† where bf16 trains
    faster); the app's table had none, so its times could not be matched to a precision."""
    page = _page(qtbot, None, "vit-b16")
    page.precision.setCurrentText("fp8")
    _run(qtbot, page)
    cols = [page.model.headerData(i, Qt.Orientation.Horizontal) for i in range(page.model.columnCount())]
    prec = cols.index("Precision")
    cells = {(r.gpu_id, r.count): page.model.index(i, prec).data() for i, r in enumerate(page.model.rows)}
    slower = [k for k, r in ((k, r) for k, r in zip(cells, page.model.rows, strict=True)) if r.faster_precision]
    assert slower and all(cells[k] == "fp8†" for k in slower)
    assert cells[("nvidia-h200-sxm-141gb", 1)] == "fp8"  # fp8 as asked, not slower there
    assert cells[("nvidia-rtx-3090", 1)] == "bf16"  # no fp8 on Ampere: the fallback
    tip = page.model.headerData(prec, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert "fp8 trains slower here than bf16" in tip and "--precision" not in tip  # the app's words
    # review 15: a bf16†/fp16† row (fp32 trains it faster) was explained as the fp8 case
    assert "16-bit trains slower here than fp32" in tip
    page.precision.setCurrentText("auto")
    _run(qtbot, page)
    cells = {(r.gpu_id, r.count): page.model.index(i, prec).data() for i, r in enumerate(page.model.rows)}
    assert cells[("nvidia-v100-sxm2-32gb", 1)] == "fp16" and cells[("nvidia-h100-sxm5-80gb", 1)] == "bf16"
    assert (
        page.proxy.headerData(page.table.horizontalHeader().sortIndicatorSection(), Qt.Orientation.Horizontal) == "Time"
    )
    page.shutdown()


def test_an_option_without_a_time_has_no_error_band(qtbot) -> None:
    """QA 15d: with "Fitting options only" unticked every option that does not fit read "—" for its
    time and "100 %" for its band."""
    page = _page(qtbot, None, "llama-70b-full")
    page.max_gpus.setCurrentText("1")
    _run(qtbot, page, 60_000)
    page.fits_only.setChecked(False)
    cols = [page.model.headerData(i, Qt.Orientation.Horizontal) for i in range(page.model.columnCount())]
    time_col, band = cols.index("Time"), cols.index("±")
    cells = [
        (page.model.index(i, time_col).data(), page.model.index(i, band).data(), r)
        for i, r in enumerate(page.model.rows)
    ]
    timeless = [b for t, b, r in cells if not (r.fits and r.total_time_h)]
    assert timeless and set(timeless) == {"—"}
    assert all(b == f"{100 * r.error_band:.0f} %" for t, b, r in cells if r.fits and r.total_time_h)
    page.shutdown()


def test_this_machine_s_line_gives_its_error_band_and_basis_as_the_cli_does(qtbot) -> None:
    """QA 16c: after a quick benchmark on a busy laptop the page read "your cpu: 577 days" beside a
    27-12,285 days bar, and nothing on it said why; `gpuselect estimate` and the report give each
    local device's ± and basis ("benchmarked on a busy machine (likely far too slow)")."""
    from gpuselect.estimate.recommend import fmt_hours

    page = _page(qtbot, "rtx3090")
    _run(qtbot, page)
    text = page.recommendation.text()
    cpu = next(loc for loc in page.result.local if loc.device == "cpu")
    assert cpu.total_time_h and cpu.fits and cpu.basis.startswith("unmeasured")
    assert f"your cpu: {fmt_hours(cpu.total_time_h)} (±{100 * cpu.error_band:.0f} %; unmeasured" in text
    assert "gpuselect bench" not in text and "use the Benchmark tab for a measured figure" in text
    page.shutdown()
