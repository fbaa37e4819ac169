"""The Estimate page's inputs come back at the next start (only the precision did), through the
window's window.ini; a damaged value there is skipped alone."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from gpuselect.gui.app import MainWindow
from gpuselect.paths import config_dir


def _open(qtbot) -> MainWindow:
    w = MainWindow()
    qtbot.addWidget(w)
    return w


def _close(qtbot, w: MainWindow) -> None:
    w.close()
    qtbot.waitUntil(lambda: w.wait_for_workers(100), timeout=20_000)


def _row_of(page, preset_id: str) -> int:
    from PySide6.QtCore import Qt

    return next(
        i for i in range(page.presets.count()) if page.presets.item(i).data(Qt.ItemDataRole.UserRole) == preset_id
    )


def _shown(e) -> dict[str, object]:
    """Every input as the page shows it."""
    from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QLineEdit, QListWidget

    out: dict[str, object] = {}
    for name, widget in vars(e).items():
        if isinstance(widget, QComboBox):
            out[name] = widget.currentText()
        elif isinstance(widget, QAbstractSpinBox) or (isinstance(widget, QLineEdit) and widget is not e.search):
            out[name] = widget.text()
        elif isinstance(widget, QListWidget):
            out[name] = widget.currentRow()
    return out


def test_the_estimate_inputs_come_back_at_the_next_start(qtbot) -> None:
    w = _open(qtbot)
    e = w.estimate
    e.presets.setCurrentRow(_row_of(e, "gpt2-124m"))
    e.config_path.setText("/data/my model/config.json")
    e.mode.setCurrentText("qlora")
    e.seq_len.setValue(2048)
    e.factory.setText("build")
    e.input_shape.setText("3,224,224")
    e.custom_params.setValue(350.5)
    e.custom_flops.setValue(42.0)
    e.source.setCurrentIndex(3)
    e.precision.setCurrentText("fp16")
    e.batch.setValue(24)
    e.dataset.setValue(123_456)
    e.epochs.setValue(7)
    e.deadline.setValue(12.5)
    e.budget.setValue(4000)
    e.electricity.setValue(0.31)
    e.max_gpus.setCurrentText("4")
    e.checkpointing.setCurrentIndex(2)
    e.loss.setCurrentIndex(1)
    e.sharding.setCurrentText("fsdp")
    e.offload.setCurrentText("optimizer")
    e.network.setValue(50)
    kept = _shown(e)
    _close(qtbot, w)
    w2 = _open(qtbot)
    e2 = w2.estimate
    assert _shown(e2) == kept
    assert (e2.source.currentIndex(), e2.deadline.value(), e2.budget.value(), e2.electricity.value()) == (
        3,
        12.5,
        4000,
        0.31,
    )
    assert e2.input_shape.text() == "3,224,224" and e2.batch.value() == 24 and e2.max_gpus.currentText() == "4"
    _close(qtbot, w2)


def test_untyped_defaults_follow_the_settings_and_a_model_file_is_not_run_at_start(qtbot, tmp_path) -> None:
    from gpuselect.settings import Settings, save

    w = _open(qtbot)
    e = w.estimate
    e.source.setCurrentIndex(2)
    e.model_path.setText(str(tmp_path / "net.py"))
    _close(qtbot, w)
    save(Settings(default_deadline_hours=24.0, electricity_usd_per_kwh=0.3))
    w2 = _open(qtbot)
    e2 = w2.estimate
    # the deadline and price were never typed: the settings' new defaults, not the old ones
    assert (e2.deadline.value(), e2.electricity.value()) == (24.0, 0.3)
    # the model file's code runs when it is measured: its fields are back, the source is not chosen
    assert e2.model_path.text() == str(tmp_path / "net.py") and e2.source.currentIndex() == 0
    _close(qtbot, w2)


def test_a_typed_price_is_kept_in_us_dollars_across_a_currency_change(qtbot) -> None:
    from gpuselect.settings import Settings, save

    w = _open(qtbot)
    w.estimate.electricity.setValue(0.25)
    _close(qtbot, w)
    save(Settings(currency_symbol="₩", usd_to_currency=1000.0))
    w2 = _open(qtbot)
    assert w2.estimate.electricity.value() == pytest.approx(250)
    _close(qtbot, w2)


def test_damaged_inputs_are_skipped_one_by_one(qtbot) -> None:
    ini = config_dir() / "window.ini"
    ini.parent.mkdir(parents=True, exist_ok=True)
    ini.write_text(
        "[estimate]\n"
        "source=abc\npreset=no-such-preset\nprecision=fp99\nbatch=2.5\ndataset=-5\nseq_len=1e400\n"
        "gflops=a,b\nmax_gpus=3\nnetwork=nan\ndeadline_hours=inf\nbudget_usd=-1\n"
        "electricity_usd_per_kwh=1e9\nparams_m=@Variant(garbage)\nmode=\nconfig=@Invalid()\n"
        "epochs=9\nloss=plain\n"
    )
    w = _open(qtbot)
    e = w.estimate
    assert e.source.currentIndex() == 0 and e.precision.currentIndex() == 0 and e.batch.value() == 0
    assert e.max_gpus.currentText() == "auto" and e.deadline.value() == 72 and e.electricity.value() == 0.15
    assert e.budget.value() == 0 and e.custom_params.value() == 100 and e.network.value() == 0
    assert e.custom_flops.value() == 10 and e.seq_len.value() == 0 and e.config_path.text() == ""
    assert e.presets.currentItem().data(0x0100) == "resnet50" and e.dataset.value() > 0  # resnet50's own
    assert e.epochs.value() == 9 and e.loss.currentText() == "plain"  # the sound values are taken
    _close(qtbot, w)


def test_a_preset_shown_instead_of_the_model_file_keeps_its_own_dataset_and_epochs(qtbot, tmp_path) -> None:
    """QA 14: the model file's 100,000 x 10 came back on the preset shown instead of it (Llama 70B:
    a stage-4 answer where its own 50,000 x 3 gave stage 3)."""
    from gpuselect.workloads.presets import get_preset

    w = _open(qtbot)
    e = w.estimate
    e.presets.setCurrentRow(_row_of(e, "llama-70b-full"))
    e.source.setCurrentIndex(2)
    e.model_path.setText(str(tmp_path / "net.py"))
    e.dataset.setValue(100_000)  # as measuring the model file fills them
    e.epochs.setValue(10)
    _close(qtbot, w)
    w2 = _open(qtbot)
    e2 = w2.estimate
    preset = get_preset("llama-70b-full")
    assert e2.source.currentIndex() == 0
    assert (e2.dataset.value(), e2.epochs.value()) == (preset.default_dataset_size, preset.default_epochs)
    _close(qtbot, w2)
