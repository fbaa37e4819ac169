"""Workload ids in one style: hyphenated ids for every preset, the older spellings still
accepted, and an unknown id answered with the closest ones."""

from __future__ import annotations

import re

import pytest

from gpuselect.errors import UsageError
from gpuselect.workloads.presets import CANONICAL_IDS, PRESETS, canonical_id, get_preset


def test_every_shown_id_is_hyphenated_lower_case() -> None:
    for wid in PRESETS:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", canonical_id(wid)), wid


def test_old_and_new_spellings_give_the_same_preset() -> None:
    for old, new in CANONICAL_IDS.items():
        assert get_preset(old) is get_preset(new) is PRESETS[old]
    assert canonical_id("gpt2-124m") == "gpt2-124m"


@pytest.mark.parametrize(
    ("typo", "expected"),
    [("bert-larg", "bert-large-squad"), ("transformer_xl_base", "transformer-xl-base"), ("resnet-50", "resnet50")],
)
def test_unknown_id_names_the_closest(typo: str, expected: str) -> None:
    with pytest.raises(UsageError, match=f"did you mean {expected}"):
        get_preset(typo)


def test_far_off_id_has_no_guess() -> None:
    with pytest.raises(UsageError) as err:
        get_preset("zzzz")
    assert "did you mean" not in str(err.value)
