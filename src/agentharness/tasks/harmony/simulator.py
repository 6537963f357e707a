"""Four-part (SATB) harmony domain code: pitches, chords, the voice-leading checker,
realization search and error injection.

Pure domain code with no agent or message types. Pitch parsing, spelling and the
chord tones of Roman numerals come from music21 (imported lazily: it takes about a
second to import); interval logic runs on MIDI numbers for speed.

A *voicing* is one chord as a tuple of MIDI numbers ``(soprano, alto, tenor, bass)``;
a *realization* is a list of voicings, one per chord of the progression.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

VOICES: tuple[str, str, str, str] = ("soprano", "alto", "tenor", "bass")
# Inclusive MIDI ranges (C4 = 60): S C4-G5, A G3-D5, T C3-G4, B E2-C4.
RANGES: tuple[tuple[int, int], ...] = ((60, 79), (55, 74), (48, 67), (40, 60))
RANGE_NAMES: tuple[tuple[str, str], ...] = (("C4", "G5"), ("G3", "D5"), ("C3", "G4"), ("E2", "C4"))
MAX_SPACING = 12  # soprano-alto and alto-tenor at most an octave apart
SMOOTH_LEAP = 7  # an upper-voice leap wider than a perfect fifth is a warning

Voicing = tuple[int, int, int, int]

# Kinds of problem the checker reports. Parallels gate the reward to zero.
PARALLEL_KINDS = ("parallel_fifths", "parallel_octaves")
ERROR_KINDS = (
    *PARALLEL_KINDS,
    "voice_crossing",
    "out_of_range",
    "spacing",
    "large_leap",
    "non_chord_tone",
    "wrong_bass",
    "incomplete_chord",
)
WARNING_KINDS = ("wide_leap",)

INTERVAL_NAMES = (
    "unison", "minor second", "major second", "minor third", "major third",
    "perfect fourth", "tritone", "perfect fifth", "minor sixth", "major sixth",
    "minor seventh", "major seventh", "octave", "minor ninth", "major ninth",
    "minor tenth", "major tenth", "perfect eleventh", "augmented eleventh",
    "perfect twelfth", "minor thirteenth", "major thirteenth", "minor fourteenth",
    "major fourteenth", "two octaves",
)  # fmt: skip


class PitchError(ValueError):
    """A note that is not a scientific pitch name; the message says why."""


# -- pitches ------------------------------------------------------------------------

_PITCH = re.compile(r"^([A-Ga-g])(##|#|x|bb|b|--|-|♯♯|♯|♭♭|♭)?(\d)$")
_ACCIDENTAL = {"##": "##", "#": "#", "x": "##", "♯♯": "##", "♯": "#",
               "bb": "--", "b": "-", "--": "--", "-": "-", "♭♭": "--", "♭": "-"}  # fmt: skip


@lru_cache(maxsize=4096)
def parse_pitch(text: str) -> int:
    """MIDI number of a scientific pitch name such as ``"F#4"``, ``"Bb3"`` or ``"C5"``.

    The octave is required (C4 is middle C; B#3 = C4 and Cb4 = B3, as in music21).
    Raises :class:`PitchError` for anything else.
    """
    from music21 import pitch  # lazy: music21 is slow to import

    m = _PITCH.match(text.strip())
    if m is None:
        raise PitchError(
            f"'{text}' is not a pitch name; write a letter A-G, an optional accidental "
            "(# or b, ## or bb) and an octave digit, e.g. 'F#4', 'Bb3', 'C5'"
        )
    letter, acc, octave = m.group(1).upper(), _ACCIDENTAL.get(m.group(2) or "", ""), m.group(3)
    try:
        return int(pitch.Pitch(f"{letter}{acc}{octave}").midi)
    except Exception as e:  # music21 rejected it: still the agent's input problem
        raise PitchError(f"'{text}' could not be read as a pitch ({e})") from e


def display_name(music21_name: str) -> str:
    """music21 writes flats as '-'; the prompt and tools use 'b' (``B-`` -> ``Bb``)."""
    return music21_name.replace("-", "b")


def spell(midi: int, names: Sequence[str]) -> str:
    """Name ``midi`` with the chord-tone spelling in ``names`` (e.g. ``["F#", "A", "C#"]``)."""
    from music21 import pitch

    for name in names:
        m21 = name.replace("b", "-") if len(name) > 1 else name
        p = pitch.Pitch(m21)
        if int(p.midi) % 12 != midi % 12:
            continue
        for octave in range(midi // 12 - 2, midi // 12 + 1):
            p.octave = octave
            if int(p.midi) == midi:
                return display_name(p.nameWithOctave)
    p = pitch.Pitch(midi=midi)  # not a chord tone: music21's default spelling
    return display_name(p.nameWithOctave)


def interval_name(semitones: int) -> str:
    """Interval name by size in semitones (enharmonic spelling is not considered)."""
    s = abs(semitones)
    return INTERVAL_NAMES[s] if s < len(INTERVAL_NAMES) else f"{s} semitones"


# -- keys and chords ----------------------------------------------------------------


@dataclass(frozen=True)
class ChordInfo:
    """One chord of the progression: its Roman numeral and the pitch classes it allows.

    Instances store it as :class:`~agentharness.tasks.harmony.problem.Chord`.
    """

    figure: str
    tones: tuple[str, ...]  # spelled chord tones, root first, e.g. ("G", "B", "D")
    bass_name: str
    pcs: frozenset[int]
    root_pc: int
    third_pc: int
    fifth_pc: int
    bass_pc: int


@lru_cache(maxsize=512)
def chord_info(figure: str, key_name: str) -> ChordInfo:
    """The chord of a Roman numeral (``"V"``, ``"ii6"``, ``"viio6"``) in a music21 key
    name (``"B-"`` major, ``"f#"`` minor)."""
    from music21 import key, roman

    rn = roman.RomanNumeral(figure, key.Key(key_name))
    root, third, fifth, bass = rn.root(), rn.third, rn.fifth, rn.bass()
    if third is None or fifth is None:
        raise ValueError(f"{figure} in {key_name} is not a triad")
    return ChordInfo(
        figure=figure,
        tones=tuple(display_name(p.name) for p in (root, third, fifth)),
        bass_name=display_name(bass.name),
        pcs=frozenset(int(p.pitchClass) for p in rn.pitches),
        root_pc=int(root.pitchClass),
        third_pc=int(third.pitchClass),
        fifth_pc=int(fifth.pitchClass),
        bass_pc=int(bass.pitchClass),
    )


def tonic_pc(key_name: str) -> int:
    from music21 import key

    return int(key.Key(key_name).tonic.pitchClass)


# -- the checker --------------------------------------------------------------------

Fault = tuple[str, int, int]  # (kind, first voice index, second voice index or same)


def local_faults(v: Voicing, chord: ChordInfo) -> list[Fault]:
    """Problems inside one chord: range, crossing, spacing and chord membership."""
    out: list[Fault] = []
    for k in range(4):
        lo, hi = RANGES[k]
        if not lo <= v[k] <= hi:
            out.append(("out_of_range", k, k))
    for k in range(3):
        if v[k] < v[k + 1]:
            out.append(("voice_crossing", k, k + 1))
        elif k < 2 and v[k] - v[k + 1] > MAX_SPACING:
            out.append(("spacing", k, k + 1))
    present = {x % 12 for x in v}
    for k in range(4):
        if v[k] % 12 not in chord.pcs:
            out.append(("non_chord_tone", k, k))
    if v[3] % 12 in chord.pcs and v[3] % 12 != chord.bass_pc:
        out.append(("wrong_bass", 3, 3))
    if chord.root_pc not in present or chord.third_pc not in present:
        out.append(("incomplete_chord", -1, -1))
    return out


def transition_faults(a: Voicing, b: Voicing) -> list[Fault]:
    """Problems between consecutive chords: parallel fifths/octaves and leaps."""
    out: list[Fault] = []
    for i in range(3):
        if a[i] == b[i]:
            continue
        for j in range(i + 1, 4):
            if a[j] == b[j]:
                continue
            before = abs(a[i] - a[j]) % 12
            if before in (0, 7) and abs(b[i] - b[j]) % 12 == before:
                out.append(("parallel_octaves" if before == 0 else "parallel_fifths", i, j))
    for k in range(4):
        d = abs(b[k] - a[k])
        if d > 12 or d in (10, 11):
            out.append(("large_leap", k, k))
        elif d > SMOOTH_LEAP and k < 3:
            out.append(("wide_leap", k, k))
    return out


def transition_clean(a: Voicing, b: Voicing) -> bool:
    """Fast check that ``transition_faults(a, b)`` is empty (the search's hot path)."""
    for k in range(4):
        d = abs(b[k] - a[k])
        if d > 12 or d in (10, 11) or (d > SMOOTH_LEAP and k < 3):
            return False
    for i in range(3):
        if a[i] == b[i]:
            continue
        for j in range(i + 1, 4):
            if a[j] == b[j]:
                continue
            before = abs(a[i] - a[j]) % 12
            if before in (0, 7) and abs(b[i] - b[j]) % 12 == before:
                return False
    return True


@dataclass(frozen=True)
class Issue:
    """One reported problem: kind, where (0-based chord, and the next one for motion)."""

    kind: str
    chord: int
    voices: tuple[str, ...]
    message: str
    spans_next: bool = False

    @property
    def is_error(self) -> bool:
        return self.kind in ERROR_KINDS

    @property
    def is_parallel(self) -> bool:
        return self.kind in PARALLEL_KINDS

    def where(self, figures: Sequence[str]) -> str:
        c = self.chord
        if self.spans_next:
            pos = f"chords {c + 1}-{c + 2} ({figures[c]} -> {figures[c + 1]})"
        else:
            pos = f"chord {c + 1} ({figures[c]})"
        who = " & ".join(self.voices) if self.voices else "all voices"
        return f"{pos}, {who}"

    def describe(self, figures: Sequence[str]) -> str:
        return f"{self.where(figures)}: {self.kind.replace('_', ' ')}: {self.message}"


def _local_issue(i: int, f: Fault, v: Voicing, names: Sequence[str], chord: ChordInfo) -> Issue:
    kind, p, q = f
    if kind == "out_of_range":
        side = "below" if v[p] < RANGES[p][0] else "above"
        msg = f"{names[p]} is {side} the {VOICES[p]} range {RANGE_NAMES[p][0]}-{RANGE_NAMES[p][1]}"
        return Issue(kind, i, (VOICES[p],), msg)
    if kind == "voice_crossing":
        msg = (
            f"the {VOICES[q]} ({names[q]}) is above the {VOICES[p]} ({names[p]}); keep "
            "soprano >= alto >= tenor >= bass"
        )
        return Issue(kind, i, (VOICES[p], VOICES[q]), msg)
    if kind == "spacing":
        gap = v[p] - v[q]
        msg = (
            f"{names[p]} over {names[q]} is a {interval_name(gap)} apart, more than an octave "
            f"(by {gap - MAX_SPACING} semitone{'s' if gap - MAX_SPACING > 1 else ''})"
        )
        return Issue(kind, i, (VOICES[p], VOICES[q]), msg)
    tones = " ".join(chord.tones)
    if kind == "non_chord_tone":
        msg = f"{names[p]} is not a tone of {chord.figure} ({tones})"
        return Issue(kind, i, (VOICES[p],), msg)
    if kind == "wrong_bass":
        msg = f"the bass {names[3]} must be {chord.bass_name} for {chord.figure}"
        return Issue(kind, i, ("bass",), msg)
    present = {x % 12 for x in v}
    missing = [
        f"{label} {tone}"
        for label, tone, pc in (
            ("root", chord.tones[0], chord.root_pc),
            ("third", chord.tones[1], chord.third_pc),
        )
        if pc not in present
    ]
    msg = f"{chord.figure} needs its root and third; missing the {' and the '.join(missing)}"
    return Issue(kind, i, (), msg)


def _transition_issue(
    i: int, f: Fault, a: Voicing, b: Voicing, na: Sequence[str], nb: Sequence[str]
) -> Issue:
    kind, p, q = f
    if kind in PARALLEL_KINDS:
        what = "fifths" if kind == "parallel_fifths" else "octaves/unisons"
        same = (b[p] - a[p]) * (b[q] - a[q]) > 0
        motion = "in similar motion" if same else "by contrary motion"
        msg = (
            f"{na[p]}/{na[q]} -> {nb[p]}/{nb[q]}: both voices move and stay perfect {what} "
            f"apart ({motion}); change one of these notes so the interval or the motion differs"
        )
        return Issue(kind, i, (VOICES[p], VOICES[q]), msg, spans_next=True)
    d = b[p] - a[p]
    direction = "up" if d > 0 else "down"
    if kind == "large_leap":
        why = "more than an octave" if abs(d) > 12 else "a seventh"
        msg = (
            f"{na[p]} -> {nb[p]} leaps {direction} a {interval_name(d)} ({why}); leaps up "
            "to a sixth, or an octave, are allowed"
        )
    else:
        msg = (
            f"{na[p]} -> {nb[p]} leaps {direction} a {interval_name(d)}; allowed but awkward in "
            "an upper voice (a fifth or less is smoother)"
        )
    return Issue(kind, i, (VOICES[p],), msg, spans_next=True)


@dataclass(frozen=True)
class Report:
    """Everything the checker found in a realization."""

    issues: tuple[Issue, ...]

    @property
    def errors(self) -> list[Issue]:
        return [x for x in self.issues if x.is_error]

    @property
    def warnings(self) -> list[Issue]:
        return [x for x in self.issues if not x.is_error]

    @property
    def parallels(self) -> list[Issue]:
        return [x for x in self.issues if x.is_parallel]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for x in self.issues:
            out[x.kind] = out.get(x.kind, 0) + 1
        return out


def check(
    realization: Sequence[Voicing], chords: Sequence[ChordInfo], names: Sequence[Sequence[str]]
) -> Report:
    """Check every chord and every move; ``names[i]`` are chord ``i``'s notes as written."""
    issues: list[Issue] = []
    for i, (v, chord) in enumerate(zip(realization, chords, strict=True)):
        issues.extend(_local_issue(i, f, v, names[i], chord) for f in local_faults(v, chord))
        if i + 1 < len(realization):
            b = realization[i + 1]
            issues.extend(
                _transition_issue(i, f, v, b, names[i], names[i + 1])
                for f in transition_faults(v, b)
            )
    issues.sort(key=lambda x: (x.chord, not x.spans_next, x.kind))
    return Report(tuple(issues))


def fault_count(realization: Sequence[Voicing], chords: Sequence[ChordInfo]) -> tuple[int, int]:
    """(errors, warnings) without building messages."""
    errors = warnings = 0
    for i, v in enumerate(realization):
        errors += len(local_faults(v, chords[i]))
        if i + 1 < len(realization):
            for kind, _, _ in transition_faults(v, realization[i + 1]):
                if kind in ERROR_KINDS:
                    errors += 1
                else:
                    warnings += 1
    return errors, warnings


def to_realization(lines: Sequence[Sequence[int]]) -> list[Voicing]:
    """Four voice lines (S, A, T, B) to one voicing per chord."""
    s, a, t, b = lines
    return [(s[i], a[i], t[i], b[i]) for i in range(len(s))]


def to_lines(realization: Sequence[Voicing]) -> list[list[int]]:
    return [[v[k] for v in realization] for k in range(4)]


# -- realization search -------------------------------------------------------------


def voice_candidates(k: int, chord: ChordInfo, margin: int = 0) -> list[int]:
    """MIDI notes voice ``k`` may sing in ``chord`` (the bass only its bass note)."""
    lo, hi = RANGES[k]
    pcs = {chord.bass_pc} if k == 3 else chord.pcs
    return [m for m in range(lo - margin, hi + margin + 1) if m % 12 in pcs]


@lru_cache(maxsize=512)
def good_voicings(chord: ChordInfo, leading_pc: int) -> tuple[tuple[Voicing, float], ...]:
    """Textbook voicings of ``chord`` with a doubling cost: complete, no crossing or
    unisons, in range and spacing, never a doubled leading tone."""
    out: list[tuple[Voicing, float]] = []
    for b in voice_candidates(3, chord):
        for t in voice_candidates(2, chord):
            if t <= b:
                continue
            for a in voice_candidates(1, chord):
                if a <= t or a - t > MAX_SPACING:
                    continue
                for s in voice_candidates(0, chord):
                    if s <= a or s - a > MAX_SPACING:
                        continue
                    v = (s, a, t, b)
                    pcs = [x % 12 for x in v]
                    if set(pcs) != set(chord.pcs) or pcs.count(leading_pc) > 1:
                        continue
                    doubled = next(pc for pc in pcs if pcs.count(pc) == 2)
                    diminished = (chord.fifth_pc - chord.root_pc) % 12 == 6
                    cost = 0.0 if doubled == chord.root_pc or diminished else 1.5
                    out.append((v, cost))
    return tuple(out)


def realize(
    chords: Sequence[ChordInfo], leading_pc: int, rng: random.Random, beam: int = 24
) -> list[Voicing] | None:
    """A smooth, error- and warning-free realization by a randomized beam search.

    Costs favour small upper-voice motion and root doubling; random offsets give
    variety. The last soprano note is the final chord's root. ``None`` if the beam
    found no continuation.
    """
    layers: list[list[tuple[float, Voicing, int]]] = []
    first = good_voicings(chords[0], leading_pc)
    if not first:
        return None
    start = [(cost + rng.uniform(0, 6), v, -1) for v, cost in first]
    start.sort(key=lambda x: x[0])
    layers.append(start[:beam])
    for i in range(1, len(chords)):
        cands = good_voicings(chords[i], leading_pc)
        if i == len(chords) - 1:
            cands = tuple(c for c in cands if c[0][0] % 12 == chords[i].root_pc)
        best: dict[Voicing, tuple[float, Voicing, int]] = {}
        prev = layers[-1]
        for v, vcost in cands:
            noise = rng.uniform(0, 3)
            for pi, (pcost, pv, _) in enumerate(prev):
                if not transition_clean(pv, v):
                    continue
                motion = sum(abs(v[k] - pv[k]) for k in range(3)) + 0.25 * abs(v[3] - pv[3])
                cost = pcost + vcost + motion + noise
                if v not in best or cost < best[v][0]:
                    best[v] = (cost, v, pi)
        if not best:
            return None
        layer = sorted(best.values(), key=lambda x: x[0])[:beam]
        layers.append(layer)
    out: list[Voicing] = []
    idx = 0
    for layer in reversed(layers):
        _, v, parent = layer[idx]
        out.append(v)
        idx = parent
    return out[::-1]


SAMPLE_TEMPERATURE = 2.0  # semitones of motion per factor e in a step's odds
SAMPLE_TRIES = 400


def sample_realization(
    chords: Sequence[ChordInfo],
    leading_pc: int,
    rng: random.Random,
    temperature: float = SAMPLE_TEMPERATURE,
) -> list[Voicing] | None:
    """A random error- and warning-free realization, drawn chord by chord.

    Each next voicing is drawn among the textbook voicings that move cleanly from the
    previous one (no parallels, no leaps wider than a fifth in the upper voices), with
    odds ``exp(-cost / temperature)`` favouring small motion and root doubling; dead
    ends backtrack. Unlike :func:`realize` (the smoothest path) this spreads exercises
    over many realizations, so no fixed answer fits many instances. The last soprano
    note is the final chord's root. ``None`` if no path was found within the tries.
    """
    options = [good_voicings(c, leading_pc) for c in chords]
    options[-1] = tuple(c for c in options[-1] if c[0][0] % 12 == chords[-1].root_pc)
    tries = 0

    def walk(i: int, prev: Voicing | None) -> list[Voicing] | None:
        nonlocal tries
        if i == len(chords):
            return []
        cands: list[tuple[float, Voicing]] = []
        for v, vcost in options[i]:
            if prev is None:
                cands.append((vcost, v))
            elif transition_clean(prev, v):
                motion = sum(abs(v[k] - prev[k]) for k in range(3)) + 0.25 * abs(v[3] - prev[3])
                cands.append((motion + vcost, v))
        for _ in range(min(4, len(cands))):
            if tries >= SAMPLE_TRIES:
                return None
            tries += 1
            weights = [math.exp(-c / temperature) for c, _ in cands]
            _, v = cands.pop(rng.choices(range(len(cands)), weights=weights)[0])
            rest = walk(i + 1, v)
            if rest is not None:
                return [v, *rest]
            if not cands:
                break
        return None

    return walk(0, None)


# -- error injection ----------------------------------------------------------------

INJECT_KINDS = {
    "parallel": PARALLEL_KINDS,
    "crossing": ("voice_crossing",),
    "range": ("out_of_range",),
    "leap": ("large_leap",),
}


@dataclass(frozen=True)
class Injection:
    """One altered note: where, from what, to what, and the error it was meant to cause."""

    chord: int
    voice: int
    original: int
    altered: int
    error_type: str


def _faults_at(real: Sequence[Voicing], chords: Sequence[ChordInfo], i: int) -> list[Fault]:
    """Faults touching chord ``i`` (its own and both adjacent moves), tagged by position."""
    out = list(local_faults(real[i], chords[i]))
    if i > 0:
        out += transition_faults(real[i - 1], real[i])
    if i + 1 < len(real):
        out += transition_faults(real[i], real[i + 1])
    return out


def _involves(f: Fault, voice: int) -> bool:
    return f[1] == voice or f[2] == voice or f[1] == -1


def _held(real: Sequence[Voicing], i: int, k: int) -> bool:
    """Does voice ``k`` hold its note of chord ``i`` from or into a neighbouring chord?"""
    return (i > 0 and real[i - 1][k] == real[i][k]) or (
        i + 1 < len(real) and real[i + 1][k] == real[i][k]
    )


def hold_repairs(given: Sequence[Voicing], chords: Sequence[ChordInfo]) -> list[list[Voicing]]:
    """Every realization made from ``given`` by one *hold*: a note replaced by the same
    voice's note in the previous or next chord (what freezing a voice at a reported
    parallel does), that has no error at all."""
    out: list[list[Voicing]] = []
    for i in range(len(given)):
        for k in range(4):
            for j in (i - 1, i + 1):
                if not 0 <= j < len(given) or given[j][k] == given[i][k]:
                    continue
                v = list(given[i])
                v[k] = given[j][k]
                trial = [*given[:i], (v[0], v[1], v[2], v[3]), *given[i + 1 :]]
                if fault_count(trial, chords)[0] == 0:
                    out.append(trial)
    return out


def inject(
    chords: Sequence[ChordInfo],
    solution: Sequence[Voicing],
    n_errors: int,
    error_types: Sequence[str],
    rng: random.Random,
) -> tuple[list[Voicing], list[Injection]] | None:
    """Alter ``n_errors`` notes of ``solution`` (at most one per chord), each to another
    tone of its chord that causes an error of the planned type. A parallel comes first
    when allowed, so the given voices always fail the gate. A note the solution holds
    from or into a neighbouring chord is never altered, so freezing a voice (copying a
    neighbour's note) never simply restores the solution. ``None`` if stuck."""
    real = list(solution)
    types = list(error_types)
    rng.shuffle(types)
    if "parallel" in types:
        types.remove("parallel")
        types.insert(0, "parallel")
    plan = [types[e % len(types)] for e in range(n_errors)]
    used: set[int] = set()
    done: list[Injection] = []
    for etype in plan:
        wanted = INJECT_KINDS[etype]
        spots = [
            (i, k)
            for i in range(len(real))
            if i not in used
            for k in range(4)
            if not _held(solution, i, k)
        ]
        rng.shuffle(spots)
        chosen: tuple[int, int, int] | None = None
        for i, k in spots:
            before = _faults_at(real, chords, i)
            options: list[tuple[int, int]] = []  # (side-effect faults, midi)
            for m in voice_candidates(k, chords[i], margin=9):
                if m == real[i][k]:
                    continue
                v = list(real[i])
                v[k] = m
                trial = [*real[:i], tuple(v), *real[i + 1 :]]
                after = _faults_at(trial, chords, i)  # type: ignore[arg-type]
                new = [f for f in after if f not in before]
                if not any(f[0] in wanted and _involves(f, k) for f in new):
                    continue
                options.append((sum(1 for f in new if f[0] not in wanted), m))
            if options:
                fewest = min(x[0] for x in options)
                chosen = (i, k, rng.choice([m for side, m in options if side == fewest]))
                break
        if chosen is None:
            return None
        i, k, m = chosen
        v = list(real[i])
        done.append(Injection(i, k, v[k], m, etype))
        v[k] = m
        real[i] = (v[0], v[1], v[2], v[3])
        used.add(i)
    # Later alterations must not have hidden earlier ones.
    for inj in done:
        wanted = INJECT_KINDS[inj.error_type]
        faults = _faults_at(real, chords, inj.chord)
        if not any(f[0] in wanted and _involves(f, inj.voice) for f in faults):
            return None
    return real, done


def changed_notes(a: Iterable[Voicing], b: Iterable[Voicing]) -> list[tuple[int, int]]:
    """(chord, voice) positions where two realizations differ (by MIDI number)."""
    return [
        (i, k) for i, (x, y) in enumerate(zip(a, b, strict=True)) for k in range(4) if x[k] != y[k]
    ]


# -- minimal repair -----------------------------------------------------------------

# A wide leap outweighs any number of changes the exercises need (at most 8), so the
# repair prefers a smooth line whenever one exists within the same chords.
WARNING_COST = 10.0


def _repair_states(g: Voicing, chord: ChordInfo, max_changes: int) -> list[tuple[Voicing, int]]:
    """Voicings with no chord-level fault that differ from ``g`` in <= ``max_changes`` notes."""
    options = [voice_candidates(k, chord) for k in range(4)]
    out: list[tuple[Voicing, int]] = []
    seen: set[Voicing] = set()

    def walk(k: int, notes: list[int], changes: int) -> None:
        if k == 4:
            v = (notes[0], notes[1], notes[2], notes[3])
            if v not in seen and not local_faults(v, chord):
                seen.add(v)
                out.append((v, changes))
            return
        walk(k + 1, [*notes, g[k]], changes)
        if changes < max_changes:
            for m in options[k]:
                if m != g[k]:
                    walk(k + 1, [*notes, m], changes + 1)

    walk(0, [], 0)
    return out


def repair(
    given: Sequence[Voicing], chords: Sequence[ChordInfo], levels: Sequence[int] = (1, 2, 4)
) -> list[Voicing] | None:
    """An error-free realization changing as few notes of ``given`` as possible.

    Dynamic programming over the chain of chords: states are the fault-free voicings
    of each chord within ``level`` changed notes, transitions must be free of parallels
    and large leaps; the cost is the number of changed notes, then wide leaps, then
    total motion. The change limit per chord widens until a path exists.
    """
    for level in levels:
        layers = [_repair_states(g, c, level) for g, c in zip(given, chords, strict=True)]
        if any(not layer for layer in layers):
            continue
        costs = [float(ch) for _, ch in layers[0]]
        parents: list[list[int]] = []
        for i in range(1, len(layers)):
            new_costs: list[float] = []
            back: list[int] = []
            for v, ch in layers[i]:
                best, arg = float("inf"), -1
                for pi, (pv, _) in enumerate(layers[i - 1]):
                    if costs[pi] >= best:
                        continue
                    faults = transition_faults(pv, v)
                    if any(f[0] in ERROR_KINDS for f in faults):
                        continue
                    motion = sum(abs(v[k] - pv[k]) for k in range(4))
                    c = costs[pi] + ch + WARNING_COST * len(faults) + 0.001 * motion
                    if c < best:
                        best, arg = c, pi
                new_costs.append(best)
                back.append(arg)
            costs = new_costs
            parents.append(back)
        end = min(range(len(costs)), key=lambda j: costs[j])
        if costs[end] == float("inf"):
            continue
        path = [end]
        for back in reversed(parents):
            path.append(back[path[-1]])
        path.reverse()
        return [layers[i][j][0] for i, j in enumerate(path)]
    return None
