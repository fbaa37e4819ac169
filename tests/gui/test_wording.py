"""The one table that turns the core's command-line wording into this window's (the Estimate page's
advice and the Hardware page's remedies had near-identical copies)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")


def test_options_and_commands_both_become_the_window_s_words() -> None:
    from gpuselect.gui.wording import in_the_app

    text = (
        "run `gpuselect estimate` first; raise the GPU limit (--max-gpus), offload (--offload) or "
        "(--offload params: one GPU); run `gpuselect health` during a benchmark"
    )
    assert in_the_app(text) == (
        "use the Estimate tab first; raise the GPU limit (Max GPUs), offload (Offload) or "
        "(Offload set to params: one GPU); refresh this page while the Benchmark tab runs"
    )


def test_text_without_command_line_words_is_unchanged() -> None:
    from gpuselect.gui.wording import in_the_app

    text = "reinstall torch with CUDA support; check `nvidia-smi` and --nproc-per-node"
    assert in_the_app(text) == text


def test_both_pages_use_the_one_helper() -> None:
    from gpuselect.gui import wording
    from gpuselect.gui.pages import estimate, hardware

    assert estimate.in_the_app is wording.in_the_app and hardware.in_the_app is wording.in_the_app
    assert not hasattr(estimate, "gui_words") and not hasattr(hardware, "_APP_PLACES")
