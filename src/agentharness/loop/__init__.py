"""The closed loop over run directories: every stage is a pure function of its inputs.

* :mod:`~agentharness.loop.checks` — what the stages check beyond reading runs
  (runs are read by :func:`agentharness.store.load_runs`);
* :mod:`~agentharness.loop.knobs` — generic knob bins, neighbours and difficulty shifts;
* :mod:`~agentharness.loop.mine` — failure clusters (``bootcamp mine``);
* :mod:`~agentharness.loop.synthesize` — expert-validated instances around failures
  (``bootcamp synth``);
* :mod:`~agentharness.loop.filter` — trajectories worth learning from (``bootcamp filter``);
* :mod:`~agentharness.loop.compare` — per-task deltas with bootstrap CIs (``bootcamp compare``);
* :mod:`~agentharness.loop.pipeline` — the whole loop, resumable (``bootcamp loop``), whose
  stages return the typed results of :mod:`~agentharness.loop.results`.
"""
