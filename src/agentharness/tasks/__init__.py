"""The built-in tasks, one package each (``agentharness.tasks.<name>``, exposing ``TASK``).

Each registers here by name and entry point, lazily: importing the registry imports no
simulator, ``get_task("thermal")`` imports only :mod:`agentharness.tasks.thermal`, and
``all_tasks()`` imports them all. A new built-in task adds one line; a task of another
package registers through the ``agentharness.tasks`` entry-point group instead.

The order is that of TASKS.md: text tasks first, then vision.
"""

from agentharness.core.registry import register_lazy

register_lazy("battery", "agentharness.tasks.battery:TASK")
register_lazy("finance", "agentharness.tasks.finance:TASK")
register_lazy("robot_reach", "agentharness.tasks.robot_reach:TASK")
register_lazy("thermal", "agentharness.tasks.thermal:TASK")
register_lazy("molecule", "agentharness.tasks.molecule:TASK")
register_lazy("harmony", "agentharness.tasks.harmony:TASK")
register_lazy("escape_room", "agentharness.tasks.escape_room:TASK")
register_lazy("holdem", "agentharness.tasks.holdem:TASK")
register_lazy("flange", "agentharness.tasks.flange:TASK")
register_lazy("tsp_vision", "agentharness.tasks.tsp_vision:TASK")
