"""harmony: repair a four-part (SATB) chorale.

The agent gets a key, a Roman-numeral progression (with each chord's tones and bass
note) and four voices realizing it in which a few notes were altered to create
voice-leading errors: parallel fifths and octaves, voice crossing, out-of-range notes
and large leaps. ``check_harmony`` reports every error and warning by chord and voice
(music21 parses the pitch names); ``submit_voices`` answers. The reward re-checks the
submission: 0 with any parallel fifth/octave left, otherwise one minus penalties for
remaining errors, wide leaps and changes beyond the number of altered notes. The
generator realizes the progression by beam search, injects the errors and keeps the
correct realization as hidden truth; the expert repairs by minimal-change search.
"""

from agentharness.tasks.harmony.task import TASK

__all__ = ["TASK"]
