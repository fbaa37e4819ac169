"""The enums in gpuselect.types are the one source of the repeated strings (issue #15): the
command line, the catalog, the estimator and the desktop app take their values from them, convert
a string to a member once at the boundary (a non-member is one sentence), and every output still
writes the plain strings."""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import re
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from gpuselect.cli import build_parser, main
from gpuselect.errors import UsageError
from gpuselect.estimate import api
from gpuselect.output import json_document
from gpuselect.types import (
    SPEC_PRECISIONS,
    TRAINING_PRECISIONS,
    Family,
    FormFactor,
    Mode,
    Offload,
    Optimizer,
    Precision,
    Sharding,
    Stage,
    parse,
    values,
)
from gpuselect.workloads.model import PUBLIC_IDS, public_id
from gpuselect.workloads.presets import PRESETS, get_preset

PACKAGE = Path(__file__).resolve().parent.parent / "gpuselect"
#: The options whose choices come from an enum, per subcommand.
ENUM_OPTIONS: dict[str, dict[str, type[Enum]]] = {
    "estimate": {
        "precision": Precision,
        "optimizer": Optimizer,
        "sharding": Sharding,
        "offload": Offload,
        "mode": Mode,
    },
    "report": {"precision": Precision, "optimizer": Optimizer, "sharding": Sharding, "offload": Offload, "mode": Mode},
    "catalog": {"family": Family},
}


def _subparser(name: str) -> argparse.ArgumentParser:
    action = next(a for a in build_parser()._actions if a.dest == "command")
    return action.choices[name]  # type: ignore[index, no-any-return]


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_enums_behave_as_their_strings() -> None:
    assert Precision.BF16 == "bf16" and json.dumps({"p": Precision.BF16}) == '{"p": "bf16"}'
    assert f"{Stage.CLUSTER}" == "4" and json.dumps([Stage.ONE_GPU]) == "[2]"
    assert Stage(2).label == "one reasonable GPU" and Stage(4).short == "cluster (several machines)"
    assert values(Family) == ["geforce", "workstation", "datacenter", "radeon", "instinct"]


@pytest.mark.parametrize(
    ("command", "dest", "kind"), [(c, d, k) for c, o in ENUM_OPTIONS.items() for d, k in o.items()]
)
def test_command_line_choices_are_the_enum_and_parse_to_members(command: str, dest: str, kind: type[Enum]) -> None:
    action = next(a for a in _subparser(command)._actions if a.dest == dest)
    assert list(action.choices or ()) == values(kind), f"{command} --{dest}"
    base = ["estimate", "--workload", "resnet50"] if command == "estimate" else [command]
    if command == "report":
        base = ["report", "-o", "r.json"]
    for v in values(kind):
        got = getattr(_parse(*base, f"--{dest.replace('_', '-')}", v), dest)
        assert type(got) is kind and got == v, (command, dest, v, got)


def test_defaults_are_members() -> None:
    args = _parse("estimate", "--workload", "resnet50")
    assert args.precision is Precision.AUTO and args.optimizer is Optimizer.ADAMW and args.offload is Offload.NONE


def test_a_non_member_on_the_command_line_lists_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["estimate", "--workload", "resnet50", "--precision", "fp64"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "invalid choice: 'fp64'" in err and all(p.value in err for p in Precision)


def test_every_precision_is_accepted_by_the_estimator() -> None:
    from gpuselect.catalog import load_catalog

    catalog = load_catalog(use_overlay=False)
    w = get_preset("gpt2-124m")
    for p in TRAINING_PRECISIONS:
        result = api.estimate(
            w, api.Assumptions(precision=p.value, counts=(1,)), catalog, gpu_ids=["nvidia-h100-sxm5-80gb"]
        )
        (row,) = result.rows
        assert type(row.precision_used) is Precision and row.precision_used != Precision.AUTO, p
        assert row.precision_used == (Precision.BF16 if p is Precision.AUTO else p), p  # an H100 runs each one
        assert type(row.family) is Family and type(result.recommendation.stage) is Stage
        assert type(result.assumptions.precision) is Precision


@pytest.mark.parametrize(
    ("field", "value", "accepted"),
    [
        ("precision", "fp64", values(Precision)),
        ("optimizer", "lion", values(Optimizer)),
        ("sharding", "zero3", values(Sharding)),
        ("offload", "disk", values(Offload)),
        ("precision", 16, values(Precision)),
        ("optimizer", ["adamw"], values(Optimizer)),
    ],
)
def test_a_non_member_is_one_sentence(field: str, value: Any, accepted: list[str]) -> None:
    with pytest.raises(UsageError) as err:
        api.Assumptions(**{field: value})
    msg = str(err.value)
    assert msg == f"{field} must be one of {', '.join(accepted)}, not {value!r}"
    assert "\n" not in msg


def test_strings_become_members_once_at_the_boundary() -> None:
    a = api.Assumptions(precision="bf16-true", optimizer="sgd", sharding="fsdp", offload="params")
    assert (type(a.precision), type(a.optimizer), type(a.sharding), type(a.offload)) == (
        Precision,
        Optimizer,
        Sharding,
        Offload,
    )
    assert api.Assumptions().sharding is None  # None stays "decide for me"
    with pytest.raises(UsageError, match=r"^the training mode must be one of full, lora, qlora, not 'lora2'$"):
        PRESETS["resnet50"].__class__(**{**PRESETS["resnet50"].__dict__, "mode": "lora2"})
    assert parse(Mode, "qlora", "mode") is Mode.QLORA


def test_catalog_entries_carry_members() -> None:
    from gpuselect.catalog import load_catalog

    entries = load_catalog(use_overlay=False).entries
    assert {type(e.family) for e in entries} == {Family} and {type(e.form_factor) for e in entries} == {FormFactor}
    assert {e.family for e in entries} == set(Family)  # every family has cards


def test_spec_precisions_are_the_catalog_rates() -> None:
    from gpuselect.catalog import load_catalog

    e = load_catalog(use_overlay=False).get("nvidia-h100-sxm5-80gb")
    assert e is not None
    assert [e.tflops(p) for p in SPEC_PRECISIONS] == [
        e.fp32_tflops,
        e.tf32_tflops,
        e.fp16_tflops,
        e.bf16_tflops,
        e.fp8_tflops,
    ]
    assert e.tflops("bf16") == e.bf16_tflops  # the plain string finds the member's rate
    with pytest.raises(KeyError):
        e.tflops(Precision.BF16_TRUE)


def test_json_writes_plain_strings(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "estimate",
                "--workload",
                "gpt2-124m",
                "--gpus",
                "nvidia-rtx-4090",
                "--precision",
                "fp16",
                "--format",
                "json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["assumptions"]["precision"] == "fp16" and doc["assumptions"]["optimizer"] == "adamw"
    assert doc["workload"]["mode"] == "full" and isinstance(doc["recommendation"]["stage"], int)
    row = doc["rows"][0]
    assert row["family"] == "geforce" and row["precision_used"] == "fp16"
    # the same through json.dumps of the dataclass fields (what settings and the writers use)
    assert json.loads(json_document({"a": api.Assumptions(sharding="zero1")}, kind="t"))["a"]["sharding"] == "zero1"


def test_csv_writes_plain_strings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--workload", "gpt2-124m", "--gpus", "amd-mi300x", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    # this machine's CPU first, as the text shows it (CSV had no row for it), then the catalog's
    assert rows[0]["gpu_id"] == "local:cpu" and rows[0]["total_time_h"] and rows[0]["note"]
    row = next(r for r in rows if r["gpu_id"] == "amd-mi300x")
    assert row["family"] == "instinct"
    assert "Precision." not in "\n".join(lines) and "Family." not in "\n".join(lines)
    # nested figures are JSON in their cell (they were Python reprs: {'weights': 7.5, ...})
    assert json.loads(row["memory_breakdown_gb"])["weights"] > 0
    assert json.loads(row["time_breakdown_s"])["compute"] > 0


# --- workload ids ------------------------------------------------------------------------------


def test_workloads_json_shows_only_public_ids(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workloads", "--format", "json"]) == 0
    ids = [w["id"] for w in json.loads(capsys.readouterr().out)["workloads"]]
    assert len(ids) == len(PRESETS) and len(set(ids)) == len(ids)
    assert not set(ids) & (set(PUBLIC_IDS) - set(PUBLIC_IDS.values()))  # no internal key shows
    for wid in ids:
        assert re.fullmatch(r"[a-z0-9]+(?:[.-][a-z0-9]+)*", wid), wid
        assert get_preset(wid).public_id == wid  # each is what --workload takes
    assert main(["workloads"]) == 0
    text_ids = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1 : len(PRESETS) + 1]]
    assert text_ids == ids  # text and JSON: the same ids, in the same order


def test_workload_ids_are_accepted_by_estimate_on_the_command_line() -> None:
    from gpuselect.app.workflows import load_workload
    from gpuselect.commands.estimate_options import workload_spec

    for w in PRESETS.values():
        spec = workload_spec(_parse("estimate", "--workload", w.public_id))
        assert load_workload(spec) is w


def test_old_ids_stay_aliases_and_outputs_show_the_public_one(capsys: pytest.CaptureFixture[str]) -> None:
    for old, new in PUBLIC_IDS.items():
        assert get_preset(old) is get_preset(new) and get_preset(old).public_id == new
    assert main(["estimate", "--workload", "bert_base_squad", "--gpus", "nvidia-rtx-4090", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["workload"]["id"] == "bert-base-squad"
    assert public_id("bert_base_squad+lora-r8") == "bert-base-squad+lora-r8" and public_id("config:x") == "config:x"


def test_report_json_names_reference_models_by_public_id(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert (
        main(["report", "--workload", "bert-base-squad", "--gpus", "nvidia-rtx-4090", "--no-bench", "-o", str(out)])
        == 0
    )
    doc = json.loads(out.read_text())["report"]
    assert doc["accuracy"]["regimes"]["reference"] > 0  # the regime bands the rows carry
    text = out.read_text()
    internal = {k for k, v in PUBLIC_IDS.items() if k != v}
    assert internal and not any(k in text for k in internal)  # no calibration-data key reaches the report


# --- no second copy --------------------------------------------------------------------------


def _string_collections(tree: ast.AST) -> list[tuple[int, set[str], bool]]:
    """(line, the literal strings of a tuple, list or set, or the literal keys of a dict as
    strings, is a dict)."""
    found = []
    for node in ast.walk(tree):
        elts = (
            node.elts
            if isinstance(node, (ast.Tuple, ast.List, ast.Set))
            else [k for k in node.keys if k is not None]
            if isinstance(node, ast.Dict)
            else []
        )
        strings = {str(e.value) for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, (str, int))}
        if strings:
            found.append((node.lineno, strings, isinstance(node, ast.Dict)))
    return found


def test_no_module_keeps_its_own_copy_of_an_enum() -> None:
    """A literal tuple, list or set holding every value of an enum, or a table keyed by every
    stage number, is a second source that can drift: take the values from gpuselect.types."""
    copies = {
        "Family": set(values(Family)),
        "FormFactor": set(values(FormFactor)),
        "Precision (spec)": {p.value for p in SPEC_PRECISIONS},
        "Optimizer": set(values(Optimizer)),
        "Sharding": set(values(Sharding)),
        "Offload": set(values(Offload)),
        "Mode": set(values(Mode)),
        "Stage": {str(s.value) for s in Stage},
    }
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "types.py" and path.parent == PACKAGE:
            continue
        for line, strings, is_dict in _string_collections(ast.parse(path.read_text(encoding="utf-8"))):
            for name, v in copies.items():
                # (a table keyed by every precision or mode is a mapping of its own: only a table keyed
                # by exactly the four stages counts)
                if (strings == v and name == "Stage") if is_dict else v <= strings:
                    offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({name})")
    assert not offenders, "literal copies of an enum's values: " + ", ".join(offenders)
