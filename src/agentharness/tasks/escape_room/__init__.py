"""escape_room: a text adventure with a chain of clues to the exit code.

The agent wakes up in a house of rooms joined by doors (some locked by keys found
elsewhere). Notes and writing on fixtures form a chain: each clue gives digits of the exit
code and the way to the next clue (a keypad box's combination, where a key is hidden, what
to examine). Tools: ``look``, ``go``, ``take``, ``use``, ``read``, ``inspect`` and
``enter_code``; the right code at the EXIT door ends the episode. Reward: 1.0 for escaping
within par (the reference solution's length), down to 0.6 at three times par, 0 without
escaping. Knobs: rooms, chain length, code length, locked doors, distractors.
"""

from agentharness.tasks.escape_room.task import TASK

__all__ = ["TASK"]
