"""The escape-room world model: rooms, doors, fixtures, items and the rules of play.

Pure domain code. A house is a :class:`~.problem.WorldSpec` (rooms, doors, fixtures and
items; built by the generator and stored as ``Hidden.world``); :class:`EscapeRoom` is the
mutable state of one play-through of it. Every action either changes the state and
returns a description, or raises :class:`SimError` **before** changing anything — so
replaying the successful actions of a trajectory reproduces the state exactly (the reward
and the expert rely on that).

A fact (what a clue reveals) is ``("digit", position, digit)`` (a digit of the exit code,
1-based position) or ``("combo", fixture_id)`` (the combination of a keypad-locked
container).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from agentharness.tasks.escape_room.problem import (
    Action,
    Fact,
    Fixture,
    Goal,
    InspectGoal,
    Item,
    ReadGoal,
    TakeGoal,
    UnlockCodeGoal,
    UnlockDoorGoal,
    UnlockKeyGoal,
    WorldSpec,
)

DIRECTIONS = ("north", "south", "east", "west", "up", "down")
OPPOSITE = {
    "north": "south",
    "south": "north",
    "east": "west",
    "west": "east",
    "up": "down",
    "down": "up",
}
EXIT_WORDS = frozenset({"exit", "exit door", "keypad", "exit keypad", "door"})


class SimError(Exception):
    """An action that cannot be carried out; the message says why and how to fix it."""


def article(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def normalize(name: str) -> str:
    s = " ".join(str(name).lower().replace("_", " ").split())
    for prefix in ("the ", "a ", "an ", "your ", "my "):
        if s.startswith(prefix):
            s = s[len(prefix) :]
    return s.strip(" .!?'\"")


def _listing(names: list[str]) -> str:
    return ", ".join(names) if names else "nothing"


class EscapeRoom:
    """Mutable state of one play-through of a world spec."""

    def __init__(self, spec: WorldSpec) -> None:
        self.spec = spec
        self.rooms = {r.id: r for r in spec.rooms}
        self.doors = {d.id: d for d in spec.doors}
        self.fixtures = {f.id: f for f in spec.fixtures}
        self.items = {i.id: i for i in spec.items}
        self.exit_code = spec.exit_code
        # room -> direction -> door id
        self.exits: dict[str, dict[str, str]] = {r: {} for r in self.rooms}
        for d in spec.doors:
            for room, direction in zip(d.rooms, d.dirs, strict=True):
                self.exits[room][direction] = d.id
        # Mutable state.
        self.room: str = spec.start
        # item -> (where, at): ("room", room), ("in", container), ("hidden", fixture), ("inv", "")
        self.location: dict[str, tuple[str, str]] = {i.id: (i.where, i.at) for i in spec.items}
        self.door_locked: dict[str, bool] = {d.id: d.key is not None for d in spec.doors}
        self.fixture_locked: dict[str, bool] = {f.id: f.lock is not None for f in spec.fixtures}
        self.examined: set[str] = set()  # notes read and fixtures inspected
        self.known: set[Fact] = set()  # facts revealed by what was read or inspected
        self.visited: set[str] = {self.room}
        self.escaped = False
        self.wrong_codes = 0

    # -- queries ----------------------------------------------------------------------
    def other_side(self, door_id: str, room: str) -> str:
        a, b = self.doors[door_id].rooms
        return b if room == a else a

    def fixtures_in(self, room: str) -> list[str]:
        return [f for f, spec in self.fixtures.items() if spec.room == room]

    def item_room(self, item_id: str) -> str | None:
        """The room an item is in (its container's room), ``None`` when carried."""
        where, at = self.location[item_id]
        if where == "inv":
            return None
        if where == "room":
            return at
        return str(self.fixtures[at].room)

    def visible_items(self, room: str) -> list[str]:
        """Items the player can see in ``room``: on the floor or in an open container."""
        out = []
        for item, (where, at) in self.location.items():
            if where == "room" and at == room:
                out.append(item)
            elif where == "in" and self.fixtures[at].room == room and not self.fixture_locked[at]:
                out.append(item)
        return out

    def inventory(self) -> list[str]:
        return [i for i, (where, _) in self.location.items() if where == "inv"]

    def digits_known(self) -> int:
        return len({f[1] for f in self.known if f[0] == "digit"})

    def passable(self, door_id: str) -> bool:
        return not self.door_locked[door_id]

    def path(self, src: str, dst: str) -> list[str] | None:
        """Directions of a shortest walk from ``src`` to ``dst`` through unlocked doors."""
        prev: dict[str, tuple[str, str] | None] = {src: None}
        queue = deque([src])
        while queue:
            room = queue.popleft()
            if room == dst:
                steps: list[str] = []
                node = room
                while prev[node] is not None:
                    parent, direction = prev[node]  # type: ignore[misc]
                    steps.append(direction)
                    node = parent
                return steps[::-1]
            for direction in DIRECTIONS:
                door = self.exits[room].get(direction)
                if door is None or not self.passable(door):
                    continue
                nxt = self.other_side(door, room)
                if nxt not in prev:
                    prev[nxt] = (room, direction)
                    queue.append(nxt)
        return None

    # -- name resolution --------------------------------------------------------------
    def _match(self, query: str, candidates: dict[str, str], what: str) -> str | None:
        """The id whose name matches ``query`` (exact, then by whole words); None if none."""
        q = normalize(query)
        if not q:
            raise SimError(f"name the {what} you mean.")
        exact = [cid for cid, name in candidates.items() if name == q]
        if exact:
            return exact[0]
        words = set(q.split())
        partial = [cid for cid, name in candidates.items() if words <= set(name.split())]
        if len(partial) == 1:
            return partial[0]
        if len(partial) > 1:
            names = ", ".join(sorted(candidates[c] for c in partial))
            raise SimError(f"'{query}' could mean several things here: {names}. Use the full name.")
        return None

    def _door_by_query(self, query: str) -> str | None:
        q = normalize(query)
        words = q.split()
        doors = self.exits[self.room]
        for direction in DIRECTIONS:
            if direction in words and (len(words) == 1 or "door" in words or "exit" in words):
                if direction not in doors:
                    raise SimError(
                        f"there is no door to the {direction} here. {self._exits_hint()}"
                    )
                return doors[direction]
        for door in doors.values():
            if q == normalize(self.rooms[self.other_side(door, self.room)].name) + " door":
                return door
        if q == "door" and doors:
            locked = [d for d in doors.values() if self.door_locked[d]]
            if len(doors) == 1:
                return next(iter(doors.values()))
            if len(locked) == 1:
                return locked[0]
            raise SimError("several doors here; say which, e.g. 'north door'.")
        return None

    def _exits_hint(self) -> str:
        dirs = [d for d in DIRECTIONS if d in self.exits[self.room]]
        return f"Exits here: {', '.join(dirs)}." if dirs else "This room has no exits."

    def _name(self, obj_id: str) -> str:
        if obj_id in self.items:
            return str(self.items[obj_id].name)
        return str(self.fixtures[obj_id].name)

    def _scope(self, *, inventory: bool, visible: bool, fixtures: bool) -> dict[str, str]:
        out: dict[str, str] = {}
        if inventory:
            out.update({i: self.items[i].name for i in self.inventory()})
        if visible:
            out.update({i: self.items[i].name for i in self.visible_items(self.room)})
        if fixtures:
            out.update({f: self.fixtures[f].name for f in self.fixtures_in(self.room)})
        return out

    def _not_here(self, query: str) -> SimError:
        seen = self._scope(inventory=True, visible=True, fixtures=True)
        names = sorted(seen.values())
        return SimError(
            f"you see no '{query}' here. Things you can refer to: {_listing(names)}. "
            "Use look to see the room again."
        )

    # -- describing -------------------------------------------------------------------
    def _fixture_label(self, fid: str) -> str:
        f = self.fixtures[fid]
        label = article(f.name)
        if f.kind == "container":
            if self.fixture_locked[fid]:
                lock = "keyhole" if f.lock == "key" else f"{len(f.code or '')}-digit keypad"
                label += f" (locked, {lock})"
            else:
                inside = [article(self.items[i].name) for i in self._contents(fid)]
                label += f" (open, contains: {_listing(inside)})"
        elif f.kind == "scenery" and f.inscription and fid not in self.examined:
            label += " (something is written on it)"
        return label

    def _contents(self, fid: str) -> list[str]:
        return [i for i, (where, at) in self.location.items() if where == "in" and at == fid]

    def look(self) -> str:
        """Describe the current room, its contents and exits, and the inventory."""
        room = self.rooms[self.room]
        lines = [f"== {room.name} ==", room.description]
        fixtures = [f for f in self.fixtures_in(self.room) if self.fixtures[f].kind != "exit"]
        lines.append(f"You see: {_listing([self._fixture_label(f) for f in fixtures])}.")
        floor = [i for i, (w, at) in self.location.items() if w == "room" and at == self.room]
        if floor:
            lines.append(f"On the floor: {_listing([article(self.items[i].name) for i in floor])}.")
        exits = []
        for direction in DIRECTIONS:
            door = self.exits[self.room].get(direction)
            if door is None:
                continue
            other = self.rooms[self.other_side(door, self.room)].name
            state = " (locked door, keyhole)" if self.door_locked[door] else ""
            exits.append(f"{direction} to the {other}{state}")
        lines.append(f"Exits: {'; '.join(exits) if exits else 'none'}.")
        for f in self.fixtures_in(self.room):
            if self.fixtures[f].kind == "exit":
                n = len(self.exit_code)
                lines.append(
                    f"The EXIT door is here. It is locked by a keypad that takes a {n}-digit code."
                )
        carried = [self.items[i].name for i in self.inventory()]
        lines.append(f"You carry: {_listing(carried)}.")
        return "\n".join(lines)

    # -- actions ----------------------------------------------------------------------
    def go(self, direction: str) -> str:
        """Walk through the door in ``direction``."""
        d = normalize(direction)
        if d not in DIRECTIONS:
            raise SimError(f"'{direction}' is not a direction; use one of {', '.join(DIRECTIONS)}.")
        door = self.exits[self.room].get(d)
        if door is None:
            raise SimError(f"there is no exit going {d} from here. {self._exits_hint()}")
        if self.door_locked[door]:
            return (
                f"The door to the {d} is locked. It has a keyhole: unlock it with "
                f"use(item='<key>', target='{d} door') while carrying the right key."
            )
        self.room = self.other_side(door, self.room)
        self.visited.add(self.room)
        return f"You go {d}.\n\n{self.look()}"

    def take(self, item: str) -> str:
        """Pick up a portable item you can see."""
        carried = self._match(
            item, self._scope(inventory=True, visible=False, fixtures=False), "item"
        )
        if carried is not None:
            return f"You already carry the {self._name(carried)}."
        found = self._match(
            item, self._scope(inventory=False, visible=True, fixtures=False), "item"
        )
        if found is None:
            fixed = self._match(
                item, self._scope(inventory=False, visible=False, fixtures=True), "item"
            )
            if fixed is not None:
                return f"The {self._name(fixed)} is fixed in place; you cannot carry it."
            raise self._not_here(item)
        self.location[found] = ("inv", "")
        return f"You take the {self._name(found)}."

    def read(self, item: str) -> str:
        """Read a note (carried or in view); on a fixture this is the same as inspect."""
        obj = self._match(item, self._scope(inventory=True, visible=True, fixtures=True), "thing")
        if obj is None:
            raise self._not_here(item)
        if obj in self.fixtures:
            return self._inspect_fixture(obj)
        spec = self.items[obj]
        if spec.kind != "note":
            return f"There is nothing written on the {spec.name}."
        self._learn(obj, spec)
        return f'The {spec.name} reads: "{spec.text}"'

    def inspect(self, target: str) -> str:
        """Examine an item, fixture or door closely; may reveal hidden things and writing."""
        obj = self._match(target, self._scope(inventory=True, visible=True, fixtures=True), "thing")
        if obj is None:
            door = self._door_by_query(target)
            if door is not None:
                return self._inspect_door(door)
            raise self._not_here(target)
        if obj in self.fixtures:
            return self._inspect_fixture(obj)
        spec = self.items[obj]
        text = spec.description
        if spec.kind == "note":
            text += f" There is writing on it; read it with read(item='{spec.name}')."
        return text

    def use(self, item: str, target: str) -> str:
        """Use a carried item (a key) on a door or container in this room."""
        held = self._match(item, self._scope(inventory=True, visible=False, fixtures=False), "item")
        if held is None:
            here = self._match(
                item, self._scope(inventory=False, visible=True, fixtures=False), "item"
            )
            if here is not None:
                raise SimError(f"you are not carrying the {self._name(here)}; take it first.")
            carried = _listing([self.items[i].name for i in self.inventory()])
            raise SimError(f"you carry no '{item}'. You carry: {carried}.")
        key = self.items[held]
        # A direction word or a bare "door" means a door, even in the room with the EXIT door.
        words = set(normalize(target).split())
        door = self._door_by_query(target) if words & set(DIRECTIONS) or words == {"door"} else None
        fixture = None
        if door is None:
            fixture = self._match(
                target, self._scope(inventory=False, visible=False, fixtures=True), "target"
            )
        if fixture is None and door is None:
            door = self._door_by_query(target)
            if door is None:
                if self._match(
                    target, self._scope(inventory=True, visible=True, fixtures=False), "target"
                ):
                    what = normalize(target)
                    return f"Nothing happens when you use the {key.name} on the {what}."
                raise self._not_here(target)
        if door is not None:
            direction = next(d for d, x in self.exits[self.room].items() if x == door)
            if not self.door_locked[door]:
                return f"The {direction} door is not locked."
            if key.kind != "key" or self.doors[door].key != held:
                return f"The {key.name} does not fit the lock of the {direction} door."
            self.door_locked[door] = False
            return f"You unlock the {direction} door with the {key.name}. It swings open."
        assert fixture is not None
        f = self.fixtures[fixture]
        if f.kind == "exit" or f.lock == "code":
            return (
                f"The {f.name} has a keypad, not a keyhole. "
                f"Use enter_code(code=..., target='{f.name}')."
            )
        if f.kind != "container" or f.lock is None:
            return f"Nothing happens when you use the {key.name} on the {f.name}."
        if not self.fixture_locked[fixture]:
            return f"The {f.name} is already open."
        if key.kind != "key" or f.key != held:
            return f"The {key.name} does not fit the lock of the {f.name}."
        self.fixture_locked[fixture] = False
        inside = self._inside(fixture)
        return f"You unlock the {f.name} with the {key.name} and open it. {inside}"

    def enter_code(self, code: str, target: str = "exit door") -> str:
        """Type a code into the keypad of the exit door or of a keypad-locked container."""
        digits = re.sub(r"[\s\-_.,/]", "", str(code))
        if not digits.isdigit():
            raise SimError(f"a code is made of digits only (got '{code}').")
        exit_here = [f for f in self.fixtures_in(self.room) if self.fixtures[f].kind == "exit"]
        q = normalize(target)
        fixture = self._match(
            target, self._scope(inventory=False, visible=False, fixtures=True), "keypad"
        )
        if fixture is None and q in EXIT_WORDS:
            if not exit_here:
                raise SimError(
                    f"there is no exit door in the {self.rooms[self.room].name}. "
                    "Find the room with the EXIT door and enter the code there."
                )
            fixture = exit_here[0]
        if fixture is None:
            raise self._not_here(target)
        f = self.fixtures[fixture]
        if f.kind != "exit" and f.lock != "code":
            raise SimError(f"the {f.name} has no keypad.")
        expected = self.exit_code if f.kind == "exit" else (f.code or "")
        if len(digits) != len(expected):
            raise SimError(f"the keypad of the {f.name} takes exactly {len(expected)} digits.")
        if f.kind == "exit":
            if digits == expected:
                self.escaped = True
                return "The keypad beeps twice and the EXIT door swings open. You escaped!"
            self.wrong_codes += 1
            return "The keypad flashes red: wrong code. The EXIT door stays locked."
        if not self.fixture_locked[fixture]:
            return f"The {f.name} is already open."
        if digits != expected:
            self.wrong_codes += 1
            return f"The keypad of the {f.name} flashes red: wrong code."
        self.fixture_locked[fixture] = False
        return f"The keypad of the {f.name} beeps and it opens. {self._inside(fixture)}"

    def apply(self, tool: str, args: Mapping[str, Any]) -> str:
        """Run the action named like a tool with keyword arguments (used for replay)."""
        actions = {
            "look": self.look,
            "go": self.go,
            "take": self.take,
            "read": self.read,
            "inspect": self.inspect,
            "use": self.use,
            "enter_code": self.enter_code,
        }
        fn = actions.get(tool)
        if fn is None:
            raise SimError(f"unknown action '{tool}'.")
        try:
            return fn(**dict(args))  # type: ignore[operator]
        except TypeError as e:
            raise SimError(f"bad arguments for {tool}: {e}") from e

    # -- internals ----------------------------------------------------------------------
    def _inside(self, fid: str) -> str:
        names = [article(self.items[i].name) for i in self._contents(fid)]
        return f"Inside: {_listing(names)}."

    def _learn(self, source: str, thing: Item | Fixture) -> None:
        self.examined.add(source)
        self.known.update(thing.facts)

    def _inspect_door(self, door: str) -> str:
        direction = next(d for d, x in self.exits[self.room].items() if x == door)
        other = self.rooms[self.other_side(door, self.room)].name
        state = "It is locked and has a keyhole." if self.door_locked[door] else "It is unlocked."
        return f"The {direction} door leads to the {other}. {state}"

    def _inspect_fixture(self, fid: str) -> str:
        f = self.fixtures[fid]
        parts = [f.description]
        if f.kind == "exit":
            parts.append(f"Its keypad takes a {len(self.exit_code)}-digit code: use enter_code.")
        elif f.kind == "container":
            if self.fixture_locked[fid]:
                if f.lock == "key":
                    parts.append("It is locked; it has a keyhole.")
                else:
                    parts.append(
                        f"It is locked by a keypad that takes a {len(f.code or '')}-digit code."
                    )
            else:
                parts.append(f"It is open. {self._inside(fid)}")
        hidden = [i for i, (w, at) in self.location.items() if w == "hidden" and at == fid]
        for item in hidden:
            # Revealed items drop to the floor so they can be taken like any other.
            self.location[item] = ("room", f.room)
            name = self.items[item].name
            parts.append(
                f"{(f.hide or '').capitalize()} you find {article(name)}! It is now on the floor."
            )
        if f.inscription:
            parts.append(f'Something is written on it: "{f.inscription}"')
            self._learn(fid, f)
        else:
            self.examined.add(fid)
        return " ".join(parts)


# -- planning and verification ----------------------------------------------------------
# A goal is one step of the hidden plan (:data:`~.problem.Goal`: take, read, inspect,
# unlock a door, a keyed or a keypad container, escape). Goals are monotone (once achieved
# they stay achieved), so planning from whatever state the world is in — after any
# interleaved actions — works.


def achieved(sim: EscapeRoom, goal: Goal) -> bool:
    if isinstance(goal, TakeGoal):
        return sim.location[goal.item][0] == "inv"
    if isinstance(goal, ReadGoal):
        return goal.item in sim.examined
    if isinstance(goal, InspectGoal):
        return goal.fixture in sim.examined
    if isinstance(goal, UnlockDoorGoal):
        return not sim.door_locked[goal.door]
    if isinstance(goal, UnlockKeyGoal | UnlockCodeGoal):
        return not sim.fixture_locked[goal.fixture]
    return sim.escaped


def _action_for(sim: EscapeRoom, goal: Goal) -> tuple[str | None, str, dict[str, str]]:
    """(room to act in or None for anywhere, tool, arguments) for an unachieved goal."""
    if isinstance(goal, TakeGoal):
        return sim.item_room(goal.item), "take", {"item": sim.items[goal.item].name}
    if isinstance(goal, ReadGoal):
        return sim.item_room(goal.item), "read", {"item": sim.items[goal.item].name}
    if isinstance(goal, InspectGoal):
        f = sim.fixtures[goal.fixture]
        return f.room, "inspect", {"target": f.name}
    if isinstance(goal, UnlockDoorGoal):
        door = sim.doors[goal.door]
        sides = [(r, d) for r, d in zip(door.rooms, door.dirs, strict=True)]
        reachable = [(len(p), r, d) for r, d in sides if (p := sim.path(sim.room, r)) is not None]
        _, room, direction = min(reachable) if reachable else (0, sides[0][0], sides[0][1])
        key = sim.items[goal.key].name
        return room, "use", {"item": key, "target": f"{direction} door"}
    f = sim.fixtures[goal.fixture]
    if isinstance(goal, UnlockKeyGoal):
        return f.room, "use", {"item": sim.items[goal.key].name, "target": f.name}
    if isinstance(goal, UnlockCodeGoal):
        return f.room, "enter_code", {"code": str(f.code), "target": f.name}
    return f.room, "enter_code", {"code": sim.exit_code, "target": "exit door"}


def plan_next(sim: EscapeRoom, goals: Sequence[Goal]) -> tuple[str, dict[str, str]] | None:
    """The next action towards the first unachieved goal, or None when all are done.

    Before walking anywhere it does what any observant player would do on the spot: pick up
    and read the plan's items in view here, and unlock a door here whose key it carries.
    """
    here = set(sim.visible_items(sim.room))
    for goal in goals:
        if achieved(sim, goal):
            continue
        on_the_spot = (isinstance(goal, TakeGoal | ReadGoal) and goal.item in here) or (
            isinstance(goal, UnlockDoorGoal)
            and sim.location[goal.key][0] == "inv"
            and sim.room in sim.doors[goal.door].rooms
        )
        if on_the_spot:
            return _action_for(sim, goal)[1:]
    for goal in goals:
        if achieved(sim, goal):
            continue
        room, tool, args = _action_for(sim, goal)
        if room is not None and room != sim.room:
            steps = sim.path(sim.room, room)
            if not steps:
                return "look", {}  # unreachable: should not happen in a generated world
            return "go", {"direction": steps[0]}
        return tool, args
    return None


def solve(spec: WorldSpec, goals: Sequence[Goal], limit: int = 1000) -> list[Action] | None:
    """Run the planner from the start; the list of actions that escapes, or None."""
    sim = EscapeRoom(spec)
    actions: list[Action] = []
    while not sim.escaped and len(actions) < limit:
        nxt = plan_next(sim, goals)
        if nxt is None:
            return None
        tool, args = nxt
        try:
            sim.apply(tool, args)
        except SimError:
            return None
        actions.append(Action(tool=tool, args=args))
    return actions if sim.escaped else None


def verify_solution(spec: WorldSpec, solution: Sequence[Action]) -> str | None:
    """Replay ``solution`` on a fresh world; None when it escapes honestly, else why not.

    Honestly means: every action succeeds, every code typed was revealed by a clue read
    before, and the escape happens on the last action.
    """
    names = [normalize(i.name) for i in spec.items] + [normalize(f.name) for f in spec.fixtures]
    if len(names) != len(set(names)):
        return "two objects share a name"
    sim = EscapeRoom(spec)
    code_digits: set[Fact] = {("digit", p + 1, d) for p, d in enumerate(spec.exit_code)}
    for n, action in enumerate(solution, 1):
        tool, args = action.tool, action.args
        if sim.escaped:
            return f"escaped before action {n}"
        if tool == "enter_code":
            target = sim._match(
                args["target"], sim._scope(inventory=False, visible=False, fixtures=True), ""
            )
            if target is None or sim.fixtures[target].kind == "exit":
                if not code_digits <= sim.known:
                    return f"action {n} types the exit code before all its digits were read"
            elif ("combo", target) not in sim.known:
                return f"action {n} types a combination that no clue read so far gave"
        try:
            text = sim.apply(tool, args)
        except SimError as e:
            return f"action {n} ({tool} {args}) failed: {e}"
        blocked = not text.startswith("You go") if tool == "go" else "wrong code" in text
        if blocked or "does not fit" in text:
            return f"action {n} ({tool} {args}) had no effect: {text}"
    return None if sim.escaped else "the solution does not escape"
