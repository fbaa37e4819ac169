"""Building the workload from CLI options: --mode/--lora-rank, --model in a subprocess, and no
abbreviated options anywhere."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest

from gpuselect.cli import build_parser, main
from gpuselect.errors import DataError, UsageError
from gpuselect.estimate.trace import OpKind
from gpuselect.workloads.build import build_workload
from gpuselect.workloads.presets import PRESETS
from gpuselect.workloads.traces import trace_for


def _parsers(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [p]
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                out += _parsers(sp)
    return out


def test_no_parser_accepts_abbreviations(capsys: pytest.CaptureFixture[str]) -> None:
    parsers = _parsers(build_parser())
    assert len(parsers) > 5 and all(not p.allow_abbrev for p in parsers)
    # --mod must not be read as --mode or --model (which runs a file's code)
    with pytest.raises(SystemExit) as e:
        main(["estimate", "--workload", "gpt2-124m", "--mod", "lora"])
    assert e.value.code == 2
    assert "--mod" in capsys.readouterr().err


def test_mode_and_rank_for_presets_and_configs(tmp_path: Path) -> None:
    assert build_workload(workload="llama-8b-full", mode="lora") is PRESETS["llama-8b-lora"]
    w = build_workload(workload="llama-8b-lora", lora_rank=64)
    assert (w.mode, w.lora_rank) == ("lora", 64) and w.trainable_params == 4 * PRESETS["llama-8b-lora"].trainable_params
    assert build_workload(workload="gpt2-124m", mode="qlora").mode == "qlora"
    cfg = tmp_path / "config.json"
    cfg.write_text(
        '{"model_type": "qwen2", "hidden_size": 512, "num_hidden_layers": 2, "num_attention_heads": 8, '
        '"num_key_value_heads": 2, "vocab_size": 1000, "intermediate_size": 1024, "max_position_embeddings": 256}'
    )
    c = build_workload(config=str(cfg), mode="qlora", lora_rank=4)
    assert any(o.kind is OpKind.DEQUANT for o in trace_for(c, checkpointing=False).ops)
    with pytest.raises(UsageError, match="transformer"):
        build_workload(workload="resnet50", mode="qlora")
    with pytest.raises(UsageError, match="transformer"):
        build_workload(params=1e6, flops_per_sample=1e6, mode="lora")
    with pytest.raises(UsageError, match="--lora-rank needs"):
        build_workload(workload="gpt2-124m", lora_rank=8)


def test_cli_mode_option(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    rc = main(
        [
            "estimate",
            "--workload",
            "llama-1b-full",
            "--mode",
            "qlora",
            "--lora-rank",
            "32",
            "--gpus",
            "nvidia-h100-sxm5-80gb",
            "--format",
            "json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["workload"]["mode"] == "qlora" and doc["workload"]["lora_rank"] == 32
    assert main(["estimate", "--workload", "resnet50", "--mode", "lora"]) == 2
    assert "resnet50 is not one" in capsys.readouterr().err


USER_FILE = """
import sys
print("noise on stdout")
print("noise on stderr", file=sys.stderr)

def build():
    from torch import nn  # imported here so the failure cases below need no torch (fast)
    print("building")
    return nn.Sequential(nn.Linear(100, 64), nn.ReLU(), nn.Linear(64, 10))

def tokens():
    from torch import nn
    return nn.Sequential(nn.Embedding(1000, 32), nn.Linear(32, 1000))
"""


def test_model_file_is_traced_in_a_subprocess(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    import json

    f = tmp_path / "net.py"
    f.write_text(USER_FILE)
    w = build_workload(model=str(f), factory="build", input_shape="100")
    assert w.params == 100 * 64 + 64 + 64 * 10 + 10
    assert w.forward_flops_per_sample == 2 * (100 * 64 + 64 * 10)
    t = trace_for(w, checkpointing=False)
    assert t is w.trace and sum(o.count for o in t.ops if o.kind is OpKind.GEMM) == 5  # 2 fwd, 2 dW, 1 dX
    assert trace_for(w, checkpointing=True).checkpointing
    # the file's prints do not reach our stdout: --format json stays one document
    capsys.readouterr()
    rc = main(
        [
            "estimate",
            "--model",
            str(f),
            "--factory",
            "build",
            "--input-shape",
            "100",
            "--gpus",
            "nvidia-h100-sxm5-80gb",
            "--format",
            "json",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and json.loads(out)["workload"]["params"] == w.params and "noise" not in out
    broken = tmp_path / "broken.py"
    broken.write_text("raise ValueError('no model today')\n")
    with pytest.raises(DataError, match="no model today"):
        build_workload(model=str(broken), factory="build", input_shape="100")
    with pytest.raises(UsageError, match="no function"):
        build_workload(model=str(f), factory="missing", input_shape="100")
    tok = build_workload(model=str(f), factory="tokens", input_shape="16")  # integer inputs, tried second
    assert tok.forward_flops_per_sample == 2 * 16 * 32 * 1000 and "integer" in tok.source
    ex = tmp_path / "exits.py"
    ex.write_text("import sys\nsys.exit(0)\n")
    with pytest.raises(DataError, match="ended the process"):
        build_workload(model=str(ex), factory="build", input_shape="100")
    with pytest.raises(UsageError, match="input-shape"):
        build_workload(model=str(f), factory="build", input_shape="100,x")


def test_a_model_returning_a_dict_is_traced_and_junk_on_stderr_is_one_short_line(tmp_path: Path) -> None:
    """A forward returning a dict (a Hugging Face ModelOutput) failed with "empty_like(): argument
    'input' must be Tensor, not dict"; a file writing 200 KB to stderr made a 65,555-byte error."""
    pytest.importorskip("torch")
    f = tmp_path / "hf.py"
    f.write_text(
        "from torch import nn\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.l = nn.Linear(16, 8)\n"
        "    def forward(self, x):\n"
        "        return {'logits': self.l(x), 'aux': 3}\n"
        "def build():\n"
        "    return M()\n"
    )
    assert build_workload(model=str(f), factory="build", input_shape="16").forward_flops_per_sample == 2 * 16 * 8
    junk = tmp_path / "junk.py"
    junk.write_text("import os, sys\nsys.stderr.write('Y' * 200000)\nsys.stderr.flush()\nos._exit(1)\n")
    with pytest.raises(DataError) as err:
        build_workload(model=str(junk), factory="build", input_shape="16")
    assert len(str(err.value)) < 300 and "the last line it wrote begins" in str(err.value)


def test_model_file_time_limit(tmp_path: Path) -> None:
    from gpuselect.workloads.profile import trace_user_model

    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(30)\n")
    with pytest.raises(DataError, match="longer than 1 s"):
        trace_user_model(slow, "build", (10,), timeout_s=1)


@pytest.mark.skipif(os.name != "posix", reason="process sessions and rlimits are POSIX")
def test_a_model_file_s_own_processes_and_memory_are_bounded(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import time

    from gpuselect.workloads.profile import trace_user_model

    # A file that starts a process holding our pipes made gpuselect wait out the time limit (and
    # then say it was exceeded); the process it started is stopped with the trace.
    pid_file = tmp_path / "child.pid"
    spawner = tmp_path / "spawner.py"
    spawner.write_text(
        "import subprocess, pathlib\n"
        f"p = subprocess.Popen(['sleep', '60'])\npathlib.Path({str(pid_file)!r}).write_text(str(p.pid))\n" + USER_FILE
    )
    t0 = time.monotonic()
    plain, _ = trace_user_model(spawner, "build", (100,), timeout_s=40)
    assert plain.params == 100 * 64 + 64 + 64 * 10 + 10 and time.monotonic() - t0 < 30
    pid = int(pid_file.read_text())
    time.sleep(0.2)
    gone = not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    assert gone
    if not sys.platform.startswith("linux"):
        return  # RLIMIT_DATA bounds private mappings on Linux only: elsewhere the hog would run on
    hog = tmp_path / "hog.py"  # allocates until something stops it
    hog.write_text("keep = []\nwhile True:\n    keep.append(bytearray(256 * 1024 * 1024))\n")
    with pytest.raises(DataError, match="ran out of the"):
        trace_user_model(hog, "build", (10,), timeout_s=60)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA bounds allocations on Linux only")
def test_torch_s_own_out_of_memory_in_a_model_file_is_one_clear_sentence(tmp_path: Path) -> None:
    """A model that allocates 10 GB in __init__ (or at import) with torch: its allocator's error
    ("[enforce fail at alloc_cpu.cpp:127] ... DefaultCPUAllocator") reached the user as it came."""
    pytest.importorskip("torch")
    from gpuselect.workloads.profile import trace_user_model

    # past the cap of 2-8 GB (on the CPU even while the trace builds on the meta device); empty: nothing is written
    big = "torch.empty(10 * 1024**3 // 4, device='cpu')"
    in_init = tmp_path / "in_init.py"
    in_init.write_text(
        "import torch\nfrom torch import nn\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        f"        super().__init__(); self.l = nn.Linear(4, 4); self.buf = {big}\n"
        "    def forward(self, x):\n"
        "        return self.l(x)\n"
        "def build():\n"
        "    return M()\n"
    )
    at_import = tmp_path / "at_import.py"
    at_import.write_text(f"import torch\nBIG = {big}\ndef build():\n    return None\n")
    for f, words in ((in_init, "tracing build() from"), (at_import, "while it was imported")):
        with pytest.raises(DataError) as err:
            trace_user_model(f, "build", (4,), timeout_s=60)
        said = str(err.value)
        assert words in said and "ran out of the" in said and "GB" in said, said
        assert "enforce fail" not in said and "\n" not in said


def test_a_forward_that_wants_other_inputs_is_told_what_it_was_given(tmp_path: Path) -> None:
    """A forward that takes a dict failed with torch's "new(): invalid data type 'str'", naming
    neither the input the trace gave it nor its shape."""
    pytest.importorskip("torch")
    f = tmp_path / "dict_input.py"
    f.write_text(
        "from torch import nn\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__(); self.l = nn.Linear(128, 10)\n"
        "    def forward(self, batch):\n"
        "        return self.l(batch['x'])\n"
        "def build():\n"
        "    return M()\n"
    )
    with pytest.raises(DataError) as err:
        build_workload(model=str(f), factory="build", input_shape="128")
    said = str(err.value)
    assert said.startswith(f"tracing build() from {f} failed: ")
    assert "calls its forward with one tensor of shape (2, 128)" in said and "\n" not in said


@pytest.mark.parametrize(
    ("body", "words"),
    [
        # torch said "AttributeError: 'int' object has no attribute 'train'"
        ("def build():\n    return 42\n", "build() from {f} cannot be traced: it returned int, not a torch.nn.Module"),
        # torch said "element 0 of tensors does not require grad and does not have a grad_fn"
        (
            "from torch import nn\ndef build():\n    return nn.ReLU()\n",
            "build() from {f} cannot be traced: the model it returned has no trainable parameters",
        ),
    ],
)
def test_a_factory_that_returns_nothing_to_train_says_so(tmp_path: Path, body: str, words: str) -> None:
    pytest.importorskip("torch")
    f = tmp_path / "net.py"
    f.write_text(body)
    with pytest.raises(DataError) as err:
        build_workload(model=str(f), factory="build", input_shape="4")
    assert str(err.value) == words.format(f=f) + ("" if "int" in words else ", so there is nothing to train")


def test_a_config_json_given_to_model_is_pointed_at_config(tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text('{"model_type": "llama"}')
    with pytest.raises(DataError, match=r"as a Python module; a Hugging Face config.json goes with --config$"):
        build_workload(model=str(cfg), factory="build", input_shape="4")


def test_own_figures_and_model_files_are_described_in_readable_numbers(tmp_path: Path) -> None:
    """Their description (the desktop app's "read as" line, the report's workload line) said
    "39370 parameters, 3.87279e+09 forward FLOPs per sample" beside "39,370 parameters" (QA 17f)."""
    w = build_workload(params=1e8, flops_per_sample=3.87279e9)
    assert w.description == "your own figures, 3.87 GFLOP per sample forward"
    big = build_workload(params=7e9, flops_per_sample=4.2e13)
    assert big.description == "your own figures, 42,000 GFLOP per sample forward"
    pytest.importorskip("torch")
    f = tmp_path / "net.py"
    f.write_text(USER_FILE)
    m = build_workload(model=str(f), factory="build", input_shape="100")
    assert m.description == "a traced model taking samples of shape (100), 0.0000141 GFLOP per sample forward"
    assert not any("e+" in d or "e-" in d for d in (w.description, big.description, m.description))
