"""molecule: find the global minimum of a Lennard-Jones cluster.

The agent gets a random starting structure of N identical atoms (N = 6-8 easy,
9-13 medium, 14-20 hard) interacting through the Lennard-Jones potential in reduced
units, and searches the energy landscape with two tools on ASE's
``LennardJones(epsilon=1, sigma=1, rc=100)`` calculator — ``energy(coordinates)`` and
``local_minimize(coordinates)`` (ASE FIRE then LBFGS) — under a call budget (30 / 25 /
20). It answers with ``submit_structure(coordinates)``.

* Ground truth: the putative global minima of the Cambridge Cluster Database (table in
  :mod:`.simulator`). The generator re-finds the structure by seeded basin hopping
  (numpy, cached per size), verifies its ASE energy against the table, and stores a
  randomly rotated and relabelled copy in ``hidden["solution"]``.
* Feedback is sparse: energies and a yes/no "global minimum reached". The target
  energy is stated in the prompt by default (the values are public); the
  ``reveal_target=False`` knob hides it.
* Reward: the submission is re-evaluated with ASE exactly as submitted (not minimized
  again); outcome (within ``tolerance``, default 1e-3), proximity by the energy gap,
  and efficiency on success.
* Expert: relaxes the start, then minimizes a perturbed copy of the hidden solution and
  submits the relaxed result.
"""

from agentharness.tasks.molecule.task import TASK

__all__ = ["TASK"]
