"""Escape-room generator: a house built around a hidden chain of clues.

Construction (all randomness from one local ``random.Random``):

1. Rooms form a random tree of doors with compass directions; the EXIT door is in a room
   farthest from the start. ``locked_doors`` tree edges are locked, each splitting off a
   region that opens when its key is used.
2. A milestone order interleaves the ``chain_length`` clue links with the door unlocks
   (a door only once the region in front of it is open). Each milestone's objects are
   placed in the rooms open at that point, preferring the region opened last, so every
   milestone is reachable when its turn comes.
3. Link 1 is a note in plain view (or writing on a fixture). Link *i+1* is guarded: a note
   in a keypad box whose combination link *i* states, a note in a keyed box whose key is
   hidden in a fixture that link *i* names, or writing on a fixture that link *i* points
   to. Every link also states some digits of the exit code (by position).
4. The hidden goal list (take / read / inspect / unlock / escape) is run through the
   planner in :mod:`.simulator` to get the reference solution; a fresh simulator then
   replays it and checks that it escapes and that every code it types was read first.
   ``par`` is the solution's length. A draw that fails is redrawn with a new sub-seed.
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import TypeAdapter

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem, UnsatisfiableKnobsError
from agentharness.tasks.escape_room.config import EscapeRoomConfig
from agentharness.tasks.escape_room.problem import Goal, Hidden, Public, WorldSpec
from agentharness.tasks.escape_room.simulator import (
    DIRECTIONS,
    OPPOSITE,
    EscapeRoom,
    normalize,
    ordinal,
    solve,
    verify_solution,
)

ROOMS: dict[str, str] = {
    "Foyer": "A draughty entrance hall with a chequered floor.",
    "Library": "Tall shelves of mouldering books line every wall.",
    "Study": "A cramped study that still smells of pipe smoke.",
    "Kitchen": "Copper pans hang over a cold iron range.",
    "Cellar": "A damp cellar; water drips somewhere in the dark.",
    "Attic": "Dusty rafters slope low over forgotten furniture.",
    "Greenhouse": "Overgrown plants press against fogged glass panes.",
    "Observatory": "A domed room with a slit in the roof open to the stars.",
    "Workshop": "Sawdust covers the floor; tools hang on a pegboard.",
    "Gallery": "A long hall of portraits whose eyes seem to follow you.",
    "Chapel": "Rows of worn pews face a small stained-glass window.",
    "Laboratory": "Glassware and strange apparatus crowd the benches.",
    "Parlor": "Faded velvet furniture sits around a silent hearth.",
    "Pantry": "Shelves of dusty jars and tins, most of them empty.",
    "Armory": "Empty weapon racks line the stone walls.",
    "Conservatory": "Wrought-iron chairs stand among potted palms.",
    "Music Room": "A room with excellent acoustics and peeling wallpaper.",
    "Dining Hall": "A long table is still set for a dinner nobody ate.",
    "Bedroom": "A four-poster bed with moth-eaten curtains.",
    "Boiler Room": "Pipes hiss and clank around a huge rusty boiler.",
    "Map Room": "Yellowed maps of distant coasts are pinned everywhere.",
    "Trophy Room": "Glass cases hold tarnished cups and medals.",
    "Nursery": "A rocking horse stands motionless by the window.",
    "Billiard Room": "A green baize table under a low-hanging lamp.",
}

# name, description, where a hidden thing is found ("behind the frame you find ...")
SCENERY: list[tuple[str, str, str]] = [
    ("painting", "An oil painting of a stern admiral.", "behind the frame"),
    ("bookshelf", "Shelves crammed with dusty almanacs.", "between two books"),
    (
        "grandfather clock",
        "A tall clock, stopped at a quarter past three.",
        "inside the pendulum case",
    ),
    ("rug", "A threadbare Persian rug.", "under a corner of the rug"),
    ("fireplace", "A cold fireplace full of ash.", "in the ashes"),
    ("writing desk", "A writing desk covered in ink stains.", "taped under the desktop"),
    ("statue", "A marble statue of a fox.", "in a crack at its base"),
    ("mirror", "A tarnished mirror in a gilt frame.", "behind the glass"),
    ("globe", "A globe on a brass stand.", "inside the hollow globe"),
    ("piano", "An out-of-tune upright piano.", "under the lid"),
    ("vase", "A tall blue vase.", "at the bottom of the vase"),
    ("armchair", "A sagging leather armchair.", "between the cushions"),
    ("wardrobe", "A heavy wardrobe full of moth-eaten coats.", "in a coat pocket"),
    ("four-poster bed", "A bed with a lumpy mattress.", "under the mattress"),
    ("workbench", "A scarred workbench.", "in a pile of sawdust"),
    ("telescope", "A brass telescope pointed at the sky.", "inside the lens cap"),
    ("barrel", "An old wine barrel.", "under the loose lid"),
    ("candelabra", "A seven-armed silver candelabra.", "in its hollow stem"),
    ("tapestry", "A faded tapestry of a hunting scene.", "behind the tapestry"),
    ("suit of armor", "An empty suit of armor holding a halberd.", "inside the helmet"),
    ("potted fern", "A fern in a cracked clay pot.", "buried in the soil"),
    ("typewriter", "A heavy black typewriter.", "under the carriage"),
    ("birdcage", "An empty birdcage.", "under the newspaper lining"),
    ("coat rack", "A coat rack with a single bowler hat.", "inside the bowler hat"),
    ("sink", "A stone sink with a dripping tap.", "in the drain trap"),
    ("stove", "A cast-iron stove.", "inside the cold oven"),
    ("floor lamp", "A floor lamp with a tasselled shade.", "under the base"),
    ("chandelier", "A crystal chandelier hanging low.", "among the crystals"),
    ("radio", "A wooden valve radio.", "in the battery compartment"),
    ("aquarium", "A murky aquarium without fish.", "under the gravel"),
    ("gramophone", "A gramophone with a large horn.", "inside the horn"),
    ("sofa", "A faded chesterfield sofa.", "under the cushions"),
    ("rocking horse", "A dappled rocking horse.", "inside its hollow saddle"),
    ("hat stand", "A tall hat stand.", "inside a top hat"),
    ("bathtub", "A claw-footed bathtub.", "under the drain cover"),
    ("boiler", "A rusty boiler with a pressure gauge.", "behind the gauge"),
    ("pew", "A worn wooden pew.", "under the kneeler"),
    ("display case", "A glass display case of medals.", "under the velvet lining"),
    ("billiard table", "A billiard table with torn baize.", "in a corner pocket"),
    ("bench", "A stone bench.", "under the seat"),
    ("cabinet of curiosities", "A cabinet full of odd skulls and shells.", "inside a conch shell"),
    ("weather vane", "A weather vane propped against the wall.", "in its hollow arrow"),
]

KEY_LOCKED = (
    ["oak", "walnut", "pine", "leather", "lacquered", "painted", "cedar", "ebony"],
    ["chest", "trunk", "cabinet", "casket", "footlocker", "sea chest"],
)
CODE_LOCKED = (
    ["iron", "steel", "grey", "black", "green", "bronze", "dented", "heavy"],
    ["safe", "strongbox", "lockbox", "cashbox"],
)
OPEN_BOXES = [
    "wicker basket",
    "cardboard box",
    "wooden crate",
    "biscuit tin",
    "hatbox",
    "sewing basket",
    "fruit bowl",
    "toolbox",
    "shoebox",
    "bread bin",
    "flower pot",
    "laundry basket",
]
KEY_MATERIALS = [
    "brass", "silver", "copper", "bronze", "golden", "bone", "glass", "jade", "pewter",
    "ivory", "obsidian", "crystal", "tin", "rusty", "ornate", "tiny", "skeleton", "red",
    "blue", "iron", "steel", "long",
]  # fmt: skip
NOTES = [
    "torn note", "yellowed letter", "crumpled paper", "postcard", "diary page", "index card",
    "scrap of parchment", "sticky note", "telegram", "old receipt", "memo", "envelope",
    "napkin", "luggage tag", "recipe card", "theatre ticket", "calling card",
    "newspaper clipping", "bookmark", "matchbook",
]  # fmt: skip
JUNK: list[tuple[str, str]] = [
    ("teacup", "A chipped porcelain teacup."),
    ("candle stub", "A stub of a tallow candle."),
    ("old coin", "A worn coin from a forgotten country."),
    ("feather", "A long grey feather."),
    ("pocket watch", "A pocket watch, stopped long ago."),
    ("spool of thread", "A spool of red thread."),
    ("chess piece", "A black knight from a chess set."),
    ("glass marble", "A swirly glass marble."),
    ("button", "A large horn button."),
    ("thimble", "A silver thimble."),
    ("dried rose", "A rose, dried and brittle."),
    ("toy soldier", "A tin soldier with chipped paint."),
    ("seashell", "A pink spiral seashell."),
    ("pencil stub", "A pencil worn down to a stub."),
    ("playing card", "The queen of spades."),
    ("harmonica", "A dented harmonica."),
]
FAKE_NOTES = [
    "Shopping list: {a} candles, {b} boxes of matches, {c} jars of honey.",
    "Locker {a}{b} combination: {c}{d}{e}. (The lockers were taken out years ago.)",
    "The gardener comes every {a} days. Do not let him into the greenhouse.",
    "Reminder: dentist at {a} o'clock on the {b}{c}th.",
    "Room {a}{b}{c} is reserved for the professor.",
    "Old telephone number: {a}{b}{c}-{d}{e}{a}{b}.",
    "Bet {a} shillings on horse number {b}{c}. Lost again.",
]
GRAFFITI = [
    "M.K. was here, 19{a}{b}.",
    "Knock {a} times and wait.",
    "All that glitters is not gold.",
    "Beware the cook.",
    "{a}{b}{c} days until freedom.",
    "Nothing to see here.",
]
EXIT_DESCRIPTION = "A steel door marked EXIT in red letters, with a numeric keypad."

SYSTEM_PROMPT = """You are playing a text escape room. You are locked in a house and must escape \
through the EXIT door, which opens only with the right numeric code.

Tools (one action each):
- look(): describe the room you are in, its objects, exits and what you carry.
- go(direction): walk through an exit (north, south, east, west, up, down).
- take(item): pick up a portable item you can see (on the floor or in an open container).
- read(item): read a note you carry or can see (on writing-covered fixtures it works like inspect).
- inspect(target): examine an item, fixture or door closely; this can reveal hidden things.
- use(item, target): use a key you carry on a locked door (e.g. target='north door') or box.
- enter_code(code, target): type digits into a keypad: the EXIT door (the default target) or a \
keypad-locked box in the same room (target=its name).

Rules: clues on notes and on fixtures give digits of the exit code by position and tell you \
how to reach the next clue (combinations of keypad boxes, where keys are hidden, what to \
examine). Some things are red herrings. Doors and boxes with a keyhole need the right key. \
A wrong code does no harm except costing an action. Every tool call counts as an action.

Answer format: the game ends when you call enter_code with the full exit code while you are in \
the room with the EXIT door."""


# The builder's plan (plain dicts) read as typed goals.
_GOALS: TypeAdapter[tuple[Goal, ...]] = TypeAdapter(tuple[Goal, ...])


class EscapeRoomGenerator:
    """Builds a solvable house around a hidden clue chain; see the module docstring."""

    max_attempts = 50

    def generate(self, config: EscapeRoomConfig, seed: int) -> Problem:
        last_error = ""
        for attempt in range(self.max_attempts):
            rng = random.Random(seed * 1_000_003 + attempt)
            try:
                builder = _Builder(config, rng)
                spec, goals = builder.build()
            except _Redraw as e:
                last_error = str(e)
                continue
            world = WorldSpec.model_validate(spec)
            plan = _GOALS.validate_python(goals)
            solution = solve(world, plan)
            if solution is None:
                last_error = "the planner did not escape"
                continue
            problem = verify_solution(world, solution)
            if problem is not None:
                last_error = problem
                continue
            par = len(solution)
            max_actions = int(config.action_limit_factor * par) + 10
            start = EscapeRoom(world)
            public = Public(
                start_room=start.rooms[start.room].name,
                n_rooms=config.n_rooms,
                code_length=config.code_length,
                par=par,
                max_actions=max_actions,
                intro=start.look(),
            )
            hidden = Hidden(
                world=world,
                goals=plan,
                solution=tuple(solution),
                par=par,
                exit_code=world.exit_code,
                attempt=attempt,
            )
            return Problem(
                public=public.model_dump(mode="json"), hidden=hidden.model_dump(mode="json")
            )
        why = f" (last: {last_error})" if last_error else ""
        raise UnsatisfiableKnobsError(
            f"escape_room: could not build a verified escape room for seed {seed}{why}; "
            "loosen the knobs (more rooms, fewer locked_doors, a shorter "
            "chain_length)"
        )

    def prompt(self, instance: Instance) -> list[Message]:
        p = instance.public_as(Public)
        text = (
            f"You wake up in the {p.start_room} of a house with {p.n_rooms} rooms. "
            f"The EXIT door takes a {p.code_length}-digit code.\n\n"
            f"{p.intro}\n\n"
            f"You have at most {p.max_actions} actions (tool calls). Escaping within "
            f"{p.par} actions earns full credit; every action beyond that lowers the "
            "score, and not escaping scores zero. Call one tool at a time and read each result."
        )
        return [system(SYSTEM_PROMPT), user(text)]


class _Redraw(Exception):
    """This draw cannot be completed (e.g. ran out of names); try the next sub-seed."""


class _Builder:
    """One attempt at a house. ``build`` returns the world spec and the hidden goal list."""

    def __init__(self, config: EscapeRoomConfig, rng: random.Random) -> None:
        self.c = config
        self.rng = rng
        self.rooms: list[dict[str, Any]] = []
        self.doors: list[dict[str, Any]] = []
        self.fixtures: list[dict[str, Any]] = []
        self.items: list[dict[str, Any]] = []
        self.names: set[str] = set()
        self.scenery = rng.sample(SCENERY, len(SCENERY))
        self.key_names = [f"{m} key" for m in rng.sample(KEY_MATERIALS, len(KEY_MATERIALS))]
        self.note_names = rng.sample(NOTES, len(NOTES))
        self.junk = rng.sample(JUNK, len(JUNK))
        self.open_boxes = rng.sample(OPEN_BOXES, len(OPEN_BOXES))
        self.goals: list[dict[str, Any]] = []

    # -- naming and object creation -------------------------------------------------
    def _claim(self, name: str) -> str:
        key = normalize(name)
        if key in self.names:
            raise _Redraw(f"duplicate name {name}")
        self.names.add(key)
        return name

    def _pop(self, pool: list[Any], what: str) -> Any:
        while pool:
            cand = pool.pop()
            name = cand[0] if isinstance(cand, tuple) else cand
            if normalize(name) not in self.names:
                return cand
        raise _Redraw(f"ran out of {what} names")

    def _fixture(
        self, room: str, kind: str, name: str, description: str, **extra: Any
    ) -> dict[str, Any]:
        f: dict[str, Any] = {
            "id": f"f{len(self.fixtures)}",
            "name": self._claim(name),
            "room": room,
            "kind": kind,
            "description": description,
            "lock": None,
            "key": None,
            "code": None,
            "hide": None,
            "inscription": None,
            "facts": [],
        }
        f.update(extra)
        self.fixtures.append(f)
        return f

    def _item(
        self, kind: str, name: str, description: str, where: str, at: str, **extra: Any
    ) -> dict[str, Any]:
        i: dict[str, Any] = {
            "id": f"i{len(self.items)}",
            "name": self._claim(name),
            "kind": kind,
            "description": description,
            "text": None,
            "facts": [],
            "where": where,
            "at": at,
        }
        i.update(extra)
        self.items.append(i)
        return i

    def _scenery(self, room: str) -> dict[str, Any]:
        name, desc, hide = self._pop(self.scenery, "scenery")
        return self._fixture(room, "scenery", name, desc, hide=hide)

    def _key(self, where: str, at: str) -> dict[str, Any]:
        name = self._pop(self.key_names, "key")
        return self._item("key", name, f"A {name} with a paper tag (the tag is blank).", where, at)

    def _note(self, where: str, at: str) -> dict[str, Any]:
        name = self._pop(self.note_names, "note")
        return self._item("note", name, f"A {name}.", where, at)

    def _open_box(self, room: str) -> dict[str, Any]:
        name = self._pop(self.open_boxes, "box")
        return self._fixture(room, "container", name, f"An unlocked {name}.")

    def _locked_box(self, room: str, lock: str) -> dict[str, Any]:
        adjectives, nouns = KEY_LOCKED if lock == "key" else CODE_LOCKED
        for _ in range(40):
            name = f"{self.rng.choice(adjectives)} {self.rng.choice(nouns)}"
            if normalize(name) not in self.names:
                break
        else:
            raise _Redraw("ran out of box names")
        if lock == "key":
            return self._fixture(room, "container", name, f"A sturdy {name}.", lock="key")
        code = "".join(self.rng.choice("0123456789") for _ in range(3))
        return self._fixture(room, "container", name, f"A sturdy {name}.", lock="code", code=code)

    def _room_name(self, room_id: str) -> str:
        return str(self.rooms[int(room_id[1:])]["name"])

    # -- the house --------------------------------------------------------------------
    def _layout(self) -> tuple[dict[str, str | None], dict[str, int]]:
        n = self.c.n_rooms
        names = self.rng.sample(sorted(ROOMS), n)
        self.rooms = [
            {"id": f"r{i}", "name": nm, "description": ROOMS[nm]} for i, nm in enumerate(names)
        ]
        used: dict[str, set[str]] = {f"r{i}": set() for i in range(n)}
        parent: dict[str, str | None] = {"r0": None}
        depth = {"r0": 0}
        flat = ("north", "south", "east", "west")
        for i in range(1, n):
            child = f"r{i}"
            options = [r for r in parent if len(used[r]) < len(DIRECTIONS)]
            p = self.rng.choice(options)
            free = [d for d in flat if d not in used[p]] or [
                d for d in DIRECTIONS if d not in used[p]
            ]
            if self.rng.random() < 0.12:  # the odd staircase
                free = [d for d in ("up", "down") if d not in used[p]] or free
            d = self.rng.choice(free)
            used[p].add(d)
            used[child].add(OPPOSITE[d])
            self.doors.append(
                {"id": f"d{i - 1}", "rooms": [p, child], "dirs": [d, OPPOSITE[d]], "key": None}
            )
            parent[child] = p
            depth[child] = depth[p] + 1
        return parent, depth

    def build(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        c, rng = self.c, self.rng
        parent, depth = self._layout()
        deepest = max(depth.values())
        exit_room = rng.choice(sorted(r for r, dpt in depth.items() if dpt == deepest))
        # A door is named by its child room (the side away from the start).
        door_of_child = {d["rooms"][1]: d for d in self.doors}
        locked_children = set(rng.sample(sorted(door_of_child), c.locked_doors))

        def region(root: str) -> list[str]:
            out, stack = [], [root]
            while stack:
                r = stack.pop()
                out.append(r)
                stack.extend(ch for ch, p in parent.items() if p == r and ch not in locked_children)
            return sorted(out)

        open_rooms = region("r0")
        newest = list(open_rooms)
        pending = set(locked_children)
        tokens = ["link"] * c.chain_length + ["door"] * c.locked_doors
        rng.shuffle(tokens)

        def pick(prefer_new: bool = True) -> str:
            pool = newest if prefer_new and rng.random() < 0.7 else open_rooms
            return rng.choice(pool)

        digits = self._exit_code()
        fragments = self._fragments(digits)
        link_sources: list[dict[str, Any]] = []  # the note or fixture holding each link's clue
        pointers: list[str] = []  # pointers[i] is written on link i's source and leads to link i+1

        for token in tokens:
            if token == "door":
                child = rng.choice(sorted(ch for ch in pending if parent[ch] in open_rooms))
                pending.discard(child)
                door = door_of_child[child]
                r = pick()
                if rng.random() < 0.5:
                    key = self._key("room", r)
                else:
                    key = self._key("in", self._open_box(r)["id"])
                door["key"] = key["id"]
                self.goals += [
                    {"do": "take", "item": key["id"]},
                    {"do": "unlock_door", "door": door["id"], "key": key["id"]},
                ]
                newest = region(child)
                open_rooms = sorted(set(open_rooms) | set(newest))
                continue
            index = len(link_sources)
            r = pick()
            if index == 0:
                guard = rng.choice(["floor", "box", "writing"])
            else:
                guard = rng.choices(["code", "key", "writing"], weights=[0.4, 0.4, 0.2])[0]
            if guard in ("floor", "box"):
                at = r if guard == "floor" else self._open_box(r)["id"]
                source = self._note("room" if guard == "floor" else "in", at)
                self.goals.append({"do": "read", "item": source["id"]})
            elif guard == "writing":
                source = self._scenery(r)
                self.goals.append({"do": "inspect", "fixture": source["id"]})
                if index > 0:
                    pointers.append(
                        f"Look closely at the {source['name']} in the {self._room_name(r)}."
                    )
            elif guard == "code":
                box = self._locked_box(r, "code")
                source = self._note("in", box["id"])
                self.goals += [
                    {"do": "unlock_code", "fixture": box["id"]},
                    {"do": "read", "item": source["id"]},
                ]
                where = self._room_name(r)
                pointers.append(
                    f"The {box['name']} in the {where} opens with the code {box['code']}."
                )
                link_sources[-1]["facts"].append(["combo", box["id"]])
            else:  # a keyed box whose key is hidden in a fixture somewhere already open
                box = self._locked_box(r, "key")
                r2 = pick(prefer_new=False)
                hideout = self._scenery(r2)
                key = self._key("hidden", hideout["id"])
                box["key"] = key["id"]
                source = self._note("in", box["id"])
                self.goals += [
                    {"do": "inspect", "fixture": hideout["id"]},
                    {"do": "take", "item": key["id"]},
                    {"do": "unlock_key", "fixture": box["id"], "key": key["id"]},
                    {"do": "read", "item": source["id"]},
                ]
                pointers.append(
                    f"The key to the {box['name']} in the {self._room_name(r)} is hidden in the "
                    f"{hideout['name']} in the {self._room_name(r2)}."
                )
            link_sources.append(source)

        for i, source in enumerate(link_sources):
            text = " ".join(
                x for x in (fragments[i], pointers[i] if i < len(pointers) else "") if x
            )
            source["facts"] += [["digit", p + 1, digits[p]] for p in self._positions[i]]
            if source["id"].startswith("i"):
                source["text"] = text
            else:
                source["inscription"] = text

        exit_fixture = self._fixture(
            exit_room, "exit", "exit door", EXIT_DESCRIPTION, lock="code", code=digits
        )
        self.goals.append({"do": "escape", "fixture": exit_fixture["id"]})
        for ch in locked_children:
            assert door_of_child[ch]["key"] is not None
        self._distractors()
        self._furnish()
        spec = {
            "start": "r0",
            "exit_code": digits,
            "rooms": self.rooms,
            "doors": self.doors,
            "fixtures": self.fixtures,
            "items": self.items,
        }
        return spec, self.goals

    def _exit_code(self) -> str:
        while True:
            code = "".join(self.rng.choice("0123456789") for _ in range(self.c.code_length))
            # Keep codes a random tool call could plausibly type out of the running.
            if len(set(code)) > 1 and code not in "01234567890" and code not in "9876543210":
                return code

    def _fragments(self, digits: str) -> list[str]:
        """Split the code positions over the links; each link's sentence states its digits."""
        n, k = len(digits), self.c.chain_length
        positions = list(range(n))
        self.rng.shuffle(positions)
        groups: list[list[int]] = [[] for _ in range(k)]
        if n >= k:
            cuts = sorted(self.rng.sample(range(1, n), k - 1))
            bounds = [0, *cuts, n]
            groups = [sorted(positions[bounds[j] : bounds[j + 1]]) for j in range(k)]
        else:  # more links than digits: the last link and some others carry one digit each
            carriers = [k - 1, *self.rng.sample(range(k - 1), n - 1)]
            for pos, j in zip(positions, carriers, strict=True):
                groups[j] = [pos]
        self._positions = groups
        out = []
        for g in groups:
            if not g:
                out.append("")
            elif len(g) == 1:
                out.append(f"The {ordinal(g[0] + 1)} digit of the exit code is {digits[g[0]]}.")
            else:
                parts = ", ".join(f"the {ordinal(p + 1)} is {digits[p]}" for p in g)
                out.append(f"Digits of the exit code: {parts}.")
        return out

    def _digits(self) -> dict[str, int]:
        return {ch: self.rng.randrange(10) for ch in "abcde"}

    def _distractors(self) -> None:
        rooms = [r["id"] for r in self.rooms]
        kinds = ["junk", "fake_note", "stray_key", "decoy_box", "graffiti"]
        for _ in range(self.c.n_distractors):
            kind = self.rng.choice(kinds)
            room = self.rng.choice(rooms)
            if kind == "junk":
                name, desc = self._pop(self.junk, "junk")
                self._item("junk", name, desc, "room", room)
            elif kind == "fake_note":
                text = self.rng.choice(FAKE_NOTES).format(**self._digits())
                self._note("room", room)["text"] = text
            elif kind == "stray_key":
                self._key("room", room)
            elif kind == "decoy_box":
                box = self._locked_box(room, "key")
                key = self._key("room", self.rng.choice(rooms))
                box["key"] = key["id"]
                name, desc = self._pop(self.junk, "junk")
                self._item("junk", name, desc, "in", box["id"])
            elif self.scenery:
                fixture = self._scenery(room)
                fixture["inscription"] = self.rng.choice(GRAFFITI).format(**self._digits())

    def _furnish(self) -> None:
        """Every room gets some plain furniture, so searching is not free."""
        for room in self.rooms:
            have = sum(
                1 for f in self.fixtures if f["room"] == room["id"] and f["kind"] == "scenery"
            )
            want = 1 + (self.rng.random() < 0.5)
            for _ in range(max(0, want - have)):
                if len(self.scenery) <= 2:
                    break
                self._scenery(room["id"])
