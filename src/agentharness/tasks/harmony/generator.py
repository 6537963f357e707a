"""Layer 1: chorale exercises built around a correct realization with injected errors."""

from __future__ import annotations

import random

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem
from agentharness.tasks.harmony import simulator
from agentharness.tasks.harmony.config import HarmonyConfig
from agentharness.tasks.harmony.interaction import BUDGETS
from agentharness.tasks.harmony.problem import Chord, Hidden, Injected, Lines, Public
from agentharness.tasks.harmony.simulator import VOICES, ChordInfo, Voicing

MAX_DRAWS = 60

# Keys by number of sharps/flats, as music21 key names (lower case = minor).
MAJOR_KEYS = {0: ["C"], 1: ["G", "F"], 2: ["D", "B-"], 3: ["A", "E-"], 4: ["E", "A-"]}
MINOR_KEYS = {0: ["a"], 1: ["e", "d"], 2: ["b", "g"], 3: ["f#", "c"], 4: ["c#", "f"]}

# Functional progressions: tonic -> predominant -> dominant -> tonic, with weights.
MAJOR_MOVES: dict[str, dict[str, int]] = {
    "I": {"IV": 3, "ii": 2, "V": 3, "vi": 2, "iii": 1, "I6": 1, "ii6": 1, "IV6": 1},
    "I6": {"IV": 2, "ii6": 2, "V": 2, "ii": 1},
    "ii": {"V": 4, "viio6": 1, "V6": 1},
    "ii6": {"V": 4, "viio6": 1},
    "iii": {"vi": 2, "IV": 1},
    "IV": {"V": 3, "I": 1, "ii": 1, "viio6": 1, "V6": 1},
    "IV6": {"V": 2, "ii": 1},
    "V": {"I": 4, "vi": 2, "I6": 1},
    "V6": {"I": 4},
    "vi": {"ii": 2, "IV": 3, "V": 1, "iii": 1, "ii6": 1, "IV6": 1},
    "viio6": {"I": 3, "I6": 1},
}
MINOR_MOVES: dict[str, dict[str, int]] = {
    "i": {"iv": 3, "V": 3, "VI": 2, "III": 1, "i6": 1, "iio6": 2, "iv6": 1},
    "i6": {"iv": 2, "iio6": 2, "V": 2},
    "iio6": {"V": 4, "viio6": 1},
    "III": {"VI": 2, "iv": 1},
    "iv": {"V": 3, "i": 1, "iio6": 1, "viio6": 1, "V6": 1},
    "iv6": {"V": 2},
    "V": {"i": 4, "VI": 2, "i6": 1},
    "V6": {"i": 4},
    "VI": {"iio6": 2, "iv": 3, "V": 1, "iv6": 1},
    "viio6": {"i": 3, "i6": 1},
}

SYSTEM = (
    "You correct four-part (SATB) chorale writing. Check and change the voices with the "
    "tools and finish by calling submit_voices. Call tools; do not just describe what you "
    "would do."
)


class GenerationError(RuntimeError):
    """No exercise could be drawn for a config (should not happen for valid configs)."""


def key_label(key_name: str) -> str:
    """``"B-"`` -> ``"Bb major"``, ``"f#"`` -> ``"F# minor"``."""
    mode = "minor" if key_name[0].islower() else "major"
    tonic = simulator.display_name(key_name[0].upper() + key_name[1:])
    return f"{tonic} {mode}"


def progression(n: int, minor: bool, inversions: bool, rng: random.Random) -> list[str] | None:
    """``n`` Roman numerals from the tonic, ending with an authentic cadence V-I."""
    moves = MINOR_MOVES if minor else MAJOR_MOVES
    tonic = "i" if minor else "I"

    def allowed(fig: str) -> bool:
        # Diminished triads only appear in first inversion, so they need inversions.
        return inversions or "6" not in fig

    for _ in range(200):
        figs = [tonic]
        while len(figs) < n - 2:
            options = {f: w for f, w in moves[figs[-1]].items() if allowed(f) and f != figs[-1]}
            if not options:
                break
            names = sorted(options)
            figs.append(rng.choices(names, weights=[options[f] for f in names])[0])
        if len(figs) != n - 2 or figs[-1] == "V" or "V" not in moves[figs[-1]]:
            continue
        return [*figs, "V", tonic]
    return None


class HarmonyGenerator:
    """Draws a key and a progression, samples a realization, then injects errors."""

    def generate(self, config: HarmonyConfig, seed: int) -> Problem:
        for draw in range(MAX_DRAWS):
            # An independent stream per draw keeps redraws deterministic.
            rng = random.Random(f"harmony:{seed}:{draw}")
            minor = config.minor_keys and rng.random() < 0.5
            table = MINOR_KEYS if minor else MAJOR_KEYS
            key_name = rng.choice(
                [k for acc, ks in table.items() if acc <= config.max_accidentals for k in ks]
            )
            figures = progression(config.n_chords, minor, config.inversions, rng)
            if figures is None:
                continue
            chords = [simulator.chord_info(f, key_name) for f in figures]
            leading = (simulator.tonic_pc(key_name) + 11) % 12
            solution = simulator.sample_realization(chords, leading, rng)
            if solution is None or not _verified(solution, chords):
                continue
            injected = simulator.inject(chords, solution, config.n_errors, config.error_types, rng)
            if injected is None:
                continue
            given, injections = injected
            if simulator.repair(given, chords, levels=(1,)) is None:
                continue  # the expert's search space must hold a fix
            if simulator.hold_repairs(given, chords):
                continue  # freezing one voice must not be a full repair
            given_names, solution_names = _names(given, chords), _names(solution, chords)
            if not (_spelled(given_names, given) and _spelled(solution_names, solution)):
                continue
            public = Public(
                key=key_name,
                key_label=key_label(key_name),
                n_chords=len(chords),
                chords=tuple(Chord.of(c) for c in chords),
                given=Lines(**given_names),
                n_altered=len(injections),
            )
            hidden = Hidden(
                solution=Lines(**solution_names),
                solution_midi=_midi(solution),
                given_midi=_midi(given),
                injected=tuple(
                    Injected(
                        chord=x.chord,
                        voice=VOICES[x.voice],
                        original=x.original,
                        altered=x.altered,
                        error_type=x.error_type,
                    )
                    for x in injections
                ),
            )
            return Problem(
                public=public.model_dump(mode="json"), hidden=hidden.model_dump(mode="json")
            )
        raise GenerationError(f"could not draw a harmony exercise for seed {seed} with {config}")

    def prompt(self, instance: Instance) -> list[Message]:
        pub = instance.public_as(Public)
        chords = pub.chord_infos()
        n, k = pub.n_chords, pub.n_altered
        given = pub.given.as_dict()
        width = max(len(c.figure) for c in chords)
        table = "\n".join(
            f"{i + 1:>3}. {c.figure:<{width}}  tones {' '.join(c.tones):<9} bass {c.bass_name}"
            for i, c in enumerate(chords)
        )
        lines = "\n".join(f"{v:>8}: {' '.join(given[v])}" for v in VOICES)
        text = (
            f"Repair this four-part chorale in {pub.key_label} ({n} chords). The harmony is "
            f"fixed; {k} note{'s were' if k > 1 else ' was'} altered from a correct "
            "realization, creating voice-leading errors. Correct the voices so that every "
            "rule below holds, changing as few notes as possible.\n\n"
            "Chords (Roman numeral, its tones, and the note the bass must sound):\n"
            f"{table}\n\n"
            "Given voices (one note per chord, scientific pitch names, C4 = middle C):\n"
            f"{lines}\n\n"
            "Rules (check_harmony reports each broken rule by chord number and voice):\n"
            "- Every note is a tone of its chord (any octave; enharmonic spellings are "
            "accepted); the bass sounds the chord's bass note; every chord contains its root "
            "and third.\n"
            "- Ranges: soprano C4-G5, alto G3-D5, tenor C3-G4, bass E2-C4.\n"
            "- No voice crossing: soprano >= alto >= tenor >= bass in every chord (unisons "
            "are allowed).\n"
            "- Spacing: at most an octave between soprano and alto and between alto and "
            "tenor.\n"
            "- No parallel fifths or octaves: two voices that both move must not form a "
            "perfect fifth (or octave/unison, compound intervals included) in two "
            "consecutive chords, in similar or contrary motion.\n"
            "- No melodic leap of a seventh or of more than an octave in any voice. Leaps "
            "wider than a perfect fifth in the soprano, alto or tenor are warnings: allowed, "
            "but they cost a little.\n\n"
            "Tools (they work on your working voices, at first the given ones):\n"
            "- check_harmony(): lists every error and warning by position, with counts, and "
            "how many notes differ from the given voices.\n"
            "- note_options(chord, voice): every note that voice could sing at that chord "
            "(numbered from 1), with the errors and warnings the voices would have with it, "
            "fewest errors first.\n"
            "- change_note(chord, voice, note): changes that one note and checks the voices.\n"
            "- submit_voices(): submits the working voices as your final answer and ends the "
            "episode.\n\n"
            "Score: 0 if any parallel fifths or octaves remain. Voices with no error at all "
            "score 1; with errors left, at most 0.5, in proportion to the given voices' "
            "errors you repaired minus the new errors you created (silencing a parallel by "
            "making a non-chord tone earns nothing). Either way the score is then scaled by "
            f"(1 - 0.2 per changed note beyond {k}; a minimal repair changes at most {k}) and "
            "by (1 - 0.05 per warning). Solved means no errors and at most "
            f"{k} changed note{'s' if k > 1 else ''}. You have at most {BUDGETS.max_turns} "
            "turns."
        )
        return [system(SYSTEM), user(text)]


def _names(real: list[Voicing], chords: list[ChordInfo]) -> dict[str, list[str]]:
    return {
        VOICES[k]: [simulator.spell(v[k], c.tones) for v, c in zip(real, chords, strict=True)]
        for k in range(4)
    }


def _midi(real: list[Voicing]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(line) for line in simulator.to_lines(real))


def _spelled(names: dict[str, list[str]], real: list[Voicing]) -> bool:
    """Every spelled name parses back to its MIDI number."""
    lines = simulator.to_lines(real)
    return all(
        simulator.parse_pitch(x) == m
        for k, v in enumerate(VOICES)
        for x, m in zip(names[v], lines[k], strict=True)
    )


def _verified(solution: list[Voicing], chords: list[ChordInfo]) -> bool:
    """The hidden realization has no error and no warning at all."""
    return simulator.fault_count(solution, chords) == (0, 0)
