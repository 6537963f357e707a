"""The instance data of an escape room, typed: ``Public`` (the prompt) and ``Hidden``.

``Hidden.world`` is the house (:class:`WorldSpec`) that
:class:`~agentharness.tasks.escape_room.simulator.EscapeRoom` plays; ``Hidden.goals`` is
the plan it was built around and ``Hidden.solution`` the reference play-through. The
generator builds the house as plain data, validates it through these models and stores
their ``model_dump(mode="json")`` (fields in the stored order, so instances are unchanged
by going through them); every layer reads instances back with
``instance.public_as(Public)`` / ``instance.hidden_as(Hidden)``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Direction = Literal["north", "south", "east", "west", "up", "down"]

# What a clue reveals: a digit of the exit code (1-based position, the digit) or the
# combination of a keypad-locked container (its id).
DigitFact = tuple[Literal["digit"], int, str]
ComboFact = tuple[Literal["combo"], str]
Fact = DigitFact | ComboFact


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Room(_Frozen):
    id: str  # "r0", "r1", ...
    name: str
    description: str


class Door(_Frozen):
    """A door between two rooms; ``dirs[k]`` is its direction seen from ``rooms[k]``."""

    id: str  # "d0", "d1", ...
    rooms: tuple[str, str]
    dirs: tuple[Direction, Direction]
    key: str | None  # the item that unlocks it; None: never locked


class Fixture(_Frozen):
    """Something fixed in a room: a container, scenery (may hide things, bear writing), the exit."""

    id: str  # "f0", "f1", ...
    name: str
    room: str
    kind: Literal["container", "scenery", "exit"]
    description: str
    lock: Literal["key", "code"] | None
    key: str | None  # a keyed container's key
    code: str | None  # a keypad's combination (the exit's is the exit code)
    hide: str | None  # scenery: where a hidden thing is found ("behind the frame")
    inscription: str | None  # writing on it
    facts: tuple[Fact, ...]  # what inspecting it reveals


class Item(_Frozen):
    """A portable thing: a key, a note (with text) or junk."""

    id: str  # "i0", "i1", ...
    name: str
    kind: Literal["key", "note", "junk"]
    description: str
    text: str | None  # a note's text
    facts: tuple[Fact, ...]  # what reading it reveals
    where: Literal["room", "in", "hidden"]  # on a floor, in a container, hidden in a fixture
    at: str  # that room's or fixture's id


class WorldSpec(_Frozen):
    """A whole house: what :class:`~.simulator.EscapeRoom` plays."""

    start: str  # the start room's id
    exit_code: str
    rooms: tuple[Room, ...]
    doors: tuple[Door, ...]
    fixtures: tuple[Fixture, ...]
    items: tuple[Item, ...]


# One step of the hidden plan. Goals are monotone: once achieved they stay achieved.
class TakeGoal(_Frozen):
    do: Literal["take"]
    item: str


class ReadGoal(_Frozen):
    do: Literal["read"]
    item: str


class InspectGoal(_Frozen):
    do: Literal["inspect"]
    fixture: str


class UnlockDoorGoal(_Frozen):
    do: Literal["unlock_door"]
    door: str
    key: str


class UnlockKeyGoal(_Frozen):
    do: Literal["unlock_key"]
    fixture: str
    key: str


class UnlockCodeGoal(_Frozen):
    do: Literal["unlock_code"]
    fixture: str


class EscapeGoal(_Frozen):
    do: Literal["escape"]
    fixture: str  # the exit door


Goal = Annotated[
    TakeGoal
    | ReadGoal
    | InspectGoal
    | UnlockDoorGoal
    | UnlockKeyGoal
    | UnlockCodeGoal
    | EscapeGoal,
    Field(discriminator="do"),
]


class Action(_Frozen):
    """One tool call of the reference solution."""

    tool: str
    args: dict[str, str]


class Public(_Frozen):
    """What the prompt states."""

    start_room: str  # its name
    n_rooms: int
    code_length: int
    par: int  # the reference solution's length
    max_actions: int  # tool calls allowed
    intro: str  # what ``look`` says in the start room


class Hidden(_Frozen):
    """The house, the plan it was built around and the reference solution."""

    world: WorldSpec
    goals: tuple[Goal, ...]
    solution: tuple[Action, ...]
    par: int
    exit_code: str
    attempt: int  # the generator's sub-seed that produced this house
