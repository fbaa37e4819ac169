"""The enums in gpuselect.types are the one source of the repeated strings: the older constants
and command-line choices must agree with them (a guard while the rest of the code switches)."""

from __future__ import annotations

import json

from gpuselect.catalog.schema import FAMILIES, FORM_FACTORS, PRECISIONS
from gpuselect.cli import build_parser
from gpuselect.estimate import api
from gpuselect.estimate.memory import OPTIMIZERS
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
)


def test_enums_behave_as_their_strings() -> None:
    assert Precision.BF16 == "bf16" and json.dumps({"p": Precision.BF16}) == '{"p": "bf16"}'
    assert ", ".join(FAMILIES) == "geforce, workstation, datacenter, radeon, instinct"
    assert Stage(2).label == "one reasonable GPU" and Stage.CLUSTER == 4


def test_old_constants_agree_with_the_enums() -> None:
    assert tuple(FAMILIES) == tuple(Family) and tuple(FORM_FACTORS) == tuple(FormFactor)
    assert tuple(PRECISIONS) == SPEC_PRECISIONS
    assert set(TRAINING_PRECISIONS) <= set(Precision)
    assert set(api.PRECISIONS) <= set(Precision)
    assert set(OPTIMIZERS) <= set(Optimizer)
    assert {int(k): v for k, v in api.STAGE_NAMES.items()} == {s.value: s.label for s in Stage}


def test_command_line_choices_are_enum_values() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    est = {a.dest: a for a in sub["estimate"]._actions}
    assert set(est["precision"].choices) - {"auto"} <= set(Precision)
    assert set(est["optimizer"].choices) <= set(Optimizer)
    for dest, enum in (("mode", Mode), ("sharding", Sharding), ("offload", Offload)):
        if dest in est:  # options other work adds
            assert set(est[dest].choices) <= set(enum), dest
