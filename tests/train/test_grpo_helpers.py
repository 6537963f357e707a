"""Small helpers of the GRPO trainer that need no model."""

from __future__ import annotations

from agentharness.train.grpo import _matches


def test_task_filter_takes_versioned_ids_and_bare_names() -> None:
    assert _matches("escape_room-v1", ["escape_room"])
    assert _matches("escape_room-v1", ["escape_room-v1"])
    assert not _matches("escape_room-v1", ["escape_room-v2"])
    # a name containing "-v" is not cut there
    assert _matches("my-vault-v3", ["my-vault"])
    assert not _matches("my-vault-v3", ["my"])
