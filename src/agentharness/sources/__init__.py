"""Tasks converted from elsewhere.

* task sources addressed by a prefix, resolved by :func:`agentharness.core.registry.get_task`:
  :mod:`~agentharness.sources.gym` (``gym:``), :mod:`~agentharness.sources.reasoning_gym`
  (``rg:``) and :mod:`~agentharness.sources.mcp` (``mcp:``);
* :mod:`~agentharness.sources.scaffold`: ``bootcamp new``, a complete task package;
* :mod:`~agentharness.sources.writer`: ``bootcamp convert``, the LLM task writer.

Nothing here is imported by the core: each source's dependencies are an extra.
"""
