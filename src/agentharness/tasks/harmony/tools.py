"""Layer 2: the per-episode exercise, its working voices and the tools on them.

``check_harmony`` reports every broken rule; ``note_options`` (v3) lists what one voice
could sing at one chord and how many errors and warnings the voices would have with it,
so a repair is chosen from numbers the agent was shown, not from a search in its head.
``change_note`` makes one change. Since v5 the environment holds the working voices
(the given ones at first): the tools act on them, so no call has to carry all the voices
(in v4 every call did, and ``change_note`` returned them in full for the next call to
copy). ``submit_voices`` answers with the working voices, or with voices it is given.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentharness.core.instance import Instance
from agentharness.core.tools import ToolError, ToolResult, World, tool
from agentharness.tasks.harmony import simulator
from agentharness.tasks.harmony.problem import Hidden, Public
from agentharness.tasks.harmony.simulator import VOICES, Voicing

MAX_LISTED = 30  # issues listed per report; the counts cover all of them

Note = Annotated[str, Field(min_length=1, max_length=8, description="pitch name, e.g. 'F#4'")]
Line = Annotated[list[Note], Field(min_length=1, max_length=32)]
ChordNumber = Annotated[int, Field(ge=1, le=32, description="chord number, from 1")]
VoiceName = Literal["soprano", "alto", "tenor", "bass"]


class Voices(BaseModel):
    """The four voices, one pitch name per chord each."""

    model_config = ConfigDict(extra="forbid")

    soprano: Line
    alto: Line
    tenor: Line
    bass: Line


def parse_voices(
    voices: dict[str, list[str]], n_chords: int
) -> tuple[list[Voicing], list[list[str]]]:
    """Voicings and the notes as written per chord; raises ToolError naming the position."""
    problems: list[str] = []
    for v in VOICES:
        line = voices.get(v)
        if not isinstance(line, list):
            problems.append(f"{v} is missing; give a list of {n_chords} pitch names")
        elif len(line) != n_chords:
            problems.append(
                f"{v} has {len(line)} note(s) but the progression has {n_chords} chords; give "
                "exactly one note per chord"
            )
    if problems:
        raise ToolError("; ".join(problems) + ".")
    midis: list[list[int]] = []
    for v in VOICES:
        row: list[int] = []
        for i, text in enumerate(voices[v]):
            try:
                row.append(simulator.parse_pitch(str(text)))
            except simulator.PitchError as e:
                problems.append(f"{v} note {i + 1} (chord {i + 1}): {e}")
                row.append(0)
        midis.append(row)
    if problems:
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        raise ToolError("; ".join(problems[:5]) + more + ".")
    names = [[str(voices[v][i]).strip() for v in VOICES] for i in range(n_chords)]
    return simulator.to_realization(midis), names


class HarmonyWorld(World):
    """One exercise: the chords, the given (faulty) voices and the working voices.

    The working voices (v5) start as the given ones; ``change_note`` edits them one note at
    a time, ``check_harmony`` and ``note_options`` look at them, and ``submit_voices``
    answers with them unless it is given voices of its own.
    """

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        pub = instance.public_as(Public)
        self.chords = pub.chord_infos()
        self.figures = [c.figure for c in self.chords]
        self.n_chords = pub.n_chords
        self.n_altered = pub.n_altered
        self.given: list[Voicing] = simulator.to_realization(instance.hidden_as(Hidden).given_midi)
        self.voices: dict[str, list[str]] = pub.given.as_dict()
        self.submitted: dict[str, list[str]] | None = None
        # (errors, parallels) of the last successful check, for the interaction's nudges.
        self.last_summary: tuple[int, int] | None = None

    def _adopt(self, voices: Voices | None) -> None:
        """Make ``voices`` (when given, and only if they parse) the working voices."""
        if voices is not None:
            new = voices.model_dump()
            parse_voices(new, self.n_chords)
            self.voices = new

    def _report(self) -> tuple[simulator.Report, list[tuple[int, int]], str]:
        real, names = parse_voices(self.voices, self.n_chords)
        report = simulator.check(real, self.chords, names)
        changed = simulator.changed_notes(self.given, real)
        errors, warnings = report.errors, report.warnings
        counts = report.counts()
        summary = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in counts.items())
        head = (
            f"{self.n_chords} chords checked: {len(errors)} error(s), {len(warnings)} "
            f"warning(s){f' ({summary})' if summary else ''}."
        )
        where = ", ".join(f"chord {i + 1} {VOICES[k]}" for i, k in changed)
        change_line = (
            f"Notes changed from the given voices: {len(changed)}"
            f"{f' ({where})' if changed else ''}; a minimal repair needs at most "
            f"{self.n_altered}."
        )
        parts = [head, change_line]
        listed = list(report.issues[:MAX_LISTED])
        if errors:
            parts.append("Errors:")
            parts += [f"- {x.describe(self.figures)}" for x in listed if x.is_error]
        if warnings:
            parts.append("Warnings:")
            parts += [f"- {x.describe(self.figures)}" for x in listed if not x.is_error]
        if len(report.issues) > MAX_LISTED:
            parts.append(f"(+{len(report.issues) - MAX_LISTED} more not listed)")
        if report.parallels:
            parts.append("Parallel fifths/octaves remain: a submission with any scores 0.")
        elif not errors:
            parts.append("No errors: these voices are a valid realization.")
        self.last_summary = (len(errors), len(report.parallels))
        return report, changed, "\n".join(parts)

    def _chord_exists(self, chord: int) -> None:
        if chord > self.n_chords:
            raise ToolError(
                f"chord {chord} does not exist: the progression has {self.n_chords} chords "
                f"(number them 1-{self.n_chords})"
            )

    @tool
    def check_harmony(self, voices: Voices | None = None) -> ToolResult:
        """Check the working voices against the chords and the voice-leading rules.

        Reports every error (parallel fifths/octaves, voice crossing, range, spacing,
        leaps, non-chord tones, wrong bass, incomplete chords) and warning by chord
        number and voice, with counts and the notes changed from the given voices.

        Args:
            voices: optional; voices to check instead, which become the working voices:
                {"soprano": [...], "alto": [...], "tenor": [...], "bass": [...]}, one pitch
                name per chord in each list, e.g. "F#4" or "Bb3".
        """
        self._adopt(voices)
        report, changed, text = self._report()
        return ToolResult(
            text=text,
            data={
                **_counts(report, changed),
                "kinds": report.counts(),
                "changed_notes": [{"chord": i + 1, "voice": VOICES[k]} for i, k in changed],
                "max_changes": self.n_altered,
                "issues": [_issue(x) for x in report.issues],
            },
            metrics={
                "errors": float(len(report.errors)),
                "warnings": float(len(report.warnings)),
                "parallels": float(len(report.parallels)),
                "changed": float(len(changed)),
            },
        )

    @tool
    def note_options(self, chord: ChordNumber, voice: VoiceName) -> ToolResult:
        """What one voice could sing at one chord, and how the working voices fare with each.

        For every tone of the chord in the voice's range (the bass: the chord's bass note),
        the number of errors and warnings the four voices would have with only that note
        changed, fewest errors first (then fewest warnings, then the smallest move). The
        note the voice sings now is marked.

        Args:
            chord: the chord's number, from 1.
            voice: "soprano", "alto", "tenor" or "bass".
        """
        self._chord_exists(chord)
        real, _ = parse_voices(self.voices, self.n_chords)
        options = options_at(real, self.chords, chord - 1, VOICES.index(voice))
        now = self.voices[voice][chord - 1]
        listed = [
            f"- {o['note']}: {o['errors']} error(s), {o['warnings']} warning(s)"
            + (" (now)" if o["current"] else "")
            for o in options
        ]
        head = f"Chord {chord} ({self.figures[chord - 1]}), {voice} (now {now}):"
        return ToolResult(
            text="\n".join([head, *listed]),
            data={"chord": chord, "voice": voice, "now": now, "options": options},
        )

    @tool
    def change_note(self, chord: ChordNumber, voice: VoiceName, note: Note) -> ToolResult:
        """Change one note of the working voices, and check them.

        Args:
            chord: the chord's number, from 1.
            voice: "soprano", "alto", "tenor" or "bass".
            note: the new pitch name, e.g. "F#4".
        """
        self._chord_exists(chord)
        new = {v: list(line) for v, line in self.voices.items()}
        old = new[voice][chord - 1]
        new[voice][chord - 1] = note
        parse_voices(new, self.n_chords)  # a bad pitch name leaves the voices as they were
        self.voices = new
        report, changed, text = self._report()
        head = (
            f"The {voice} at chord {chord} changed from {old} to {note}; the {voice} is now "
            f"{' '.join(new[voice])}."
        )
        return ToolResult(
            text=f"{head}\n{text}",
            data={"voices": new, **_counts(report, changed), "kinds": report.counts()},
            metrics={"errors": float(len(report.errors)), "changed": float(len(changed))},
        )

    @tool(final=True)
    def submit_voices(self, voices: Voices | None = None) -> ToolResult:
        """Submit the working voices as your final answer; this ends the episode.

        Args:
            voices: optional; voices to submit instead of the working ones, as for
                check_harmony.
        """
        self._adopt(voices)
        report, changed, _ = self._report()
        self.submitted = {v: list(line) for v, line in self.voices.items()}
        return ToolResult(
            text=(
                f"Voices submitted: {len(report.errors)} error(s) "
                f"({len(report.parallels)} parallel), {len(report.warnings)} warning(s), "
                f"{len(changed)} note(s) changed."
            ),
            data={"voices": self.submitted, **_counts(report, changed)},
            metrics={"errors": float(len(report.errors)), "changed": float(len(changed))},
        )


def options_at(
    real: list[Voicing], chords: list[simulator.ChordInfo], i: int, k: int
) -> list[dict[str, Any]]:
    """Every note voice ``k`` may sing at chord ``i`` (0-based), with the errors and warnings
    of ``real`` with only that note changed, best first (ties: the smaller move)."""
    rows: list[tuple[int, int, int, int]] = []
    for m in simulator.voice_candidates(k, chords[i]):
        trial = list(real)
        notes = list(trial[i])
        notes[k] = m
        trial[i] = (notes[0], notes[1], notes[2], notes[3])
        errors, warnings = simulator.fault_count(trial, chords)
        rows.append((errors, warnings, abs(m - real[i][k]), m))
    rows.sort()
    return [
        {
            "note": simulator.spell(m, chords[i].tones),
            "errors": errors,
            "warnings": warnings,
            "current": m == real[i][k],
        }
        for errors, warnings, _, m in rows
    ]


# -- the results as data (``ToolResult.data``; chords numbered from 1, as in the text) --


def _counts(report: simulator.Report, changed: list[tuple[int, int]]) -> dict[str, int]:
    """How many errors, warnings and parallels the voices have, and notes changed."""
    return {
        "errors": len(report.errors),
        "warnings": len(report.warnings),
        "parallels": len(report.parallels),
        "changed": len(changed),
    }


def _issue(x: simulator.Issue) -> dict[str, Any]:
    """One reported problem; a motion (``spans_next``) is from ``chord`` to the next."""
    return {
        "kind": x.kind,
        "chord": x.chord + 1,
        "spans_next": x.spans_next,
        "voices": list(x.voices),
        "error": x.is_error,
        "message": x.message,
    }
