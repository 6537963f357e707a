"""agentharness: executable, verifiable multi-turn agent environments.

import agentharness
env = agentharness.make("escape_room-v1", difficulty="easy")
ep = env.reset(seed=7)
"""

from agentharness.core import *  # noqa: F403
from agentharness.core import __all__ as _core_all

__version__ = "0.1.0"
__all__ = [*_core_all, "__version__"]
