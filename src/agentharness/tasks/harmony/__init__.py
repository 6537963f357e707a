"""harmony: repair a four-part (SATB) chorale.

The agent gets a key, a Roman-numeral progression (with each chord's tones and bass
note) and four voices realizing it in which a few notes were altered to create
voice-leading errors: parallel fifths and octaves, voice crossing, out-of-range notes
and large leaps. ``check_harmony`` reports every error and warning by chord and voice
(music21 parses the pitch names); ``submit_voices`` answers.

Reward (v2) pays for repairing, measured against the given chorale's own errors:
``repair x no_parallels x minimal_changes x smoothness``. ``repair`` is 1 when no error
remains, otherwise 0.5 x the net fraction of the given errors repaired (errors of the
given voices gone, minus errors the answer newly creates, at least 0); any parallel
fifth/octave left scores 0; each changed note beyond the number altered takes 0.2 and
each wide leap 0.05 off the factor. Success means no error and no unnecessary change.
So echoing the given voices, holding every voice still (no parallels but non-chord
tones) and freezing a voice at each reported parallel earn nothing, and a fixed answer
(another exercise's solution) is not a repair of these voices.

The generator draws a realization of the progression at random (many realizations per
progression, so exercises rarely repeat), injects the errors without ever altering a
note the realization holds from a neighbouring chord, rejects exercises that one held
note repairs, and keeps the correct realization as hidden truth.

``note_options`` (v3) lists, for one chord and voice, every note the voice could sing
there with the errors and warnings the voices would have with it. The expert plans a
minimal-change repair (dynamic programming over the chords) and then makes each change
in the open: it asks ``note_options`` for that position and takes the new note from the
list, in an order where each is the best option listed whenever there is one (on easy,
one altered note, 19 of 20 exercises). v2's expert named the new notes from its private
search, which SmolLM2-135M trained on its trajectories could not imitate; v3's instances
and rewards are v2's, with the new tool in the prompt.

``change_note(voices, chord, voice, note)`` (v4) returns the voices with that one note
changed, in full (JSON), with their check. SmolLM2-135M trained on v3's expert asked
``note_options`` at the right place and named the best note, then passed the voices
unchanged to ``check_harmony`` and ``submit_voices``: writing out a 20-note list with one
note changed is the step it could not imitate. v4's expert makes each change with
``change_note`` and submits the voices the last one returned, so its answer is a copy of
a tool's reply. Instances and rewards are v3's.

Since v5 the environment holds the working voices (at first the given ones): ``change_note(chord,
voice, note)`` edits them in place, ``note_options(chord, voice)`` and ``check_harmony()``
look at them, and ``submit_voices()`` answers with them (``check_harmony`` and
``submit_voices`` still take voices of their own, which become the working voices). No call
has to carry the twenty-odd notes any more: v4's calls each did, and an easy expert
episode cost the model 584 tokens a GRPO row, which made a GRPO step take over two minutes
on two cores. Instances and rewards are v4's; the reward re-checks the submitted voices.
v1 paid about 0.4 for any answer
without parallels and 0.85 on easy for freezing voices.
"""

from agentharness.tasks.harmony.task import TASK

__all__ = ["TASK"]
