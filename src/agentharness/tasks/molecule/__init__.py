"""molecule: find the global minimum of a Lennard-Jones cluster.

The agent gets a random starting structure of N identical atoms (N = 7-9 easy, 10-14
medium, 15-20 hard) interacting through the Lennard-Jones potential with epsilon = 1
and a per-instance length unit sigma (0.8-1.6), and searches the energy landscape with
two tools — ``energy(coordinates)`` (ASE's ``LennardJones(epsilon=1, sigma, rc=100)``)
and ``local_minimize(coordinates)`` (L-BFGS on the analytic potential, ASE's energy
of the result) — under a call budget (30 / 15 / 12). It answers with
``submit_structure(coordinates)``.

* Ground truth: the putative global minima of the Cambridge Cluster Database (table in
  :mod:`.simulator`; energies do not depend on sigma). The coordinates of each size's
  minimum ship with the package (``global_minima.json``, found once by the module's
  seeded basin hopping); the generator scales them by sigma,
  verifies its ASE energy against the table, and stores a randomly rotated and
  relabelled copy in ``Hidden.solution`` (:mod:`.problem`). Sigma varies so that no
  fixed structure (say, another instance's answer) answers every instance of a size.
* The start is redrawn until its local minimum, found with the tool's own optimizer,
  lies at least 2% of ``|E_global|`` above the global minimum: one ``local_minimize``
  of the start never solves an instance (v1 checked starts with a different optimizer
  than the tool's, so about 1 in 4 easy starts were solved by one call).
* Feedback is sparse: energies and a yes/no "global minimum reached". The target
  energy is stated in the prompt by default (the values are public); the
  ``reveal_target=False`` knob hides it.
* Reward (v2): the submission is re-evaluated with ASE exactly as submitted (not
  minimized again). Within ``tolerance`` (default 1e-3) of the global minimum: 1, less
  up to 0.05 for the share of the budget used. Otherwise ``0.5 x progress``, progress
  being how far the energy got from the start's own local minimum towards the global
  one (clipped to [0, 1]): the start, its local minimum or anything higher earn 0.
  Efficiency only trims a solved answer (v1 paid it for zero calls).
* Expert: an honest basin-hopping search through the tools (relax the start, relax an
  icosahedral packing, then perturb-and-minimize with the Metropolis rule); only with
  one call left and no success does it minimize a perturbed copy of the hidden
  solution (about 0% / 3% / 20% of easy / medium / hard episodes).
* v3 stores the solution's energy and the start's local minimum rounded to 6 decimals:
  v2 stored ASE's sums in full, whose last bits differ between numpy builds and CPUs, so
  the same seed gave a different instance on another machine. Otherwise v2's.
* v4 makes instances the same on every CPU. v3 still ran basin hopping while generating,
  and a last-bit difference in a BLAS dot product or a SIMD ``pow`` changed a Metropolis
  decision, so 6 of 15 sizes ended in another copy of their minimum on another CPU (a
  fresh CI machine got other medium and hard instances). v4 reads the minima from a
  table, rotates with a quaternion instead of a LAPACK QR, and its L-BFGS, perturbation
  and rotation use elementwise arithmetic and numpy's fixed-order sums only.
"""

from agentharness.tasks.molecule.task import TASK

__all__ = ["TASK"]
