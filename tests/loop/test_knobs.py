from __future__ import annotations

import random

import pytest

from agentharness import get_task
from agentharness.core.registry import all_tasks
from agentharness.loop.knobs import (
    config_bins,
    knob_bins,
    neighbour_config,
    off_preset,
    preset_configs,
    shifted_config,
)


def test_guess_bins_are_anchored_at_the_presets() -> None:
    spec = get_task("guess")
    kb = knob_bins(spec)["high"]
    assert kb.numeric and kb.integer
    # presets: easy 100, medium 1000, hard 10000; edges halfway between them
    assert kb.label(100) == kb.label(2) == "<550 ~easy"
    assert kb.label(1000) == kb.label(5499) == "[550,5500) ~medium"
    assert kb.label(5500) == "[5500,14500) ~hard"
    assert kb.label(50000) == ">=14500"


@pytest.mark.parametrize("spec", all_tasks(), ids=lambda s: s.id)
def test_every_preset_sits_in_its_own_bins_and_neighbours_keep_them(spec) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(0)
    for difficulty, config in preset_configs(spec).items():
        bins = config_bins(spec, config)
        assert set(bins) == set(spec.config_model.model_fields)
        assert off_preset(spec, difficulty, bins) == {}
        for name, label in bins.items():
            if knob_bins(spec)[name].numeric:
                assert difficulty in label.split("~")[1].split("/"), (name, label)
        for _ in range(3):
            near = neighbour_config(spec, config, rng)
            assert spec.config_model.model_validate(near) is not None
            assert config_bins(spec, near) == bins


def test_shifts_move_knobs_toward_the_neighbouring_preset() -> None:
    spec = get_task("escape_room")
    presets = preset_configs(spec)
    medium = presets["medium"]
    harder = shifted_config(spec, medium, "medium", +1)
    easier = shifted_config(spec, medium, "medium", -1)
    assert harder is not None and easier is not None
    for knob in ("n_rooms", "chain_length", "n_distractors"):
        assert medium[knob] < harder[knob] <= presets["hard"][knob]
        assert presets["easy"][knob] <= easier[knob] < medium[knob]
    # Past the hardest preset the last step is extrapolated, within the field bounds.
    beyond = shifted_config(spec, presets["hard"], "hard", +1)
    assert beyond is not None and beyond["n_rooms"] > presets["hard"]["n_rooms"]
    assert beyond["chain_length"] <= 8


def test_shift_is_none_when_nothing_can_move() -> None:
    spec = get_task("guess")
    floor = {"high": 2}
    assert shifted_config(spec, floor, "easy", -1) is None
    assert shifted_config(spec, floor, "easy", +1) == {"high": 452}
