"""finance: forecast next year's financial statements (finance-v3).

The agent sees three years of a synthetic company's income statement, balance sheet and
cash flow statement (28 line items, whole USD thousands, internally consistent) and
forecasts the next year. The forecast must satisfy the accounting identities (within a
stated tolerance) and plausibility bounds (driver ranges, tax and interest rates, a cash
floor), and a set of ratios (margins, ROE, ROA, liquidity, leverage, turnover, cash
conversion, ...) must each match or beat their best historical value.
``calculate_metrics`` reports every violated identity and bound, every ratio and each
condition's gap; ``submit_forecast`` is the answer. Harder difficulties bring more
conditions, tighter bounds and ratios that pull against each other. Every instance is
built around a hidden forecast found by linear programming.

Computation tools (v3). Meeting every identity, bound and condition at once is a linear
program a policy cannot solve in its head, so the task gives it a solver, and its expert
uses it, so every number in its trajectories was visible first (see
:mod:`agentharness.imitability`):

* ``linear_program(constraints, objective, goal)`` (:mod:`.lp`): a linear program over
  named variables, each constraint written as algebra (``"gross_profit = revenue - cogs"``,
  ``"30000 <= revenue <= 36000"``, ``"gross_profit >= 0.41 * revenue"``), parsed (never
  ``eval``-ed), checked to be linear and solved with scipy's HiGHS; it returns the value of
  every variable (to cents) at the optimum of the objective;
* ``calculate(expression)`` and ``solve_linear(a, b)`` from
  :class:`~agentharness.core.calculator.CalculatorWorld`.

The solver is generic and knows nothing of the company, so it does not hand out answers:
the agent still writes the model — which identities (with the prior-year values put in),
which bounds, each ratio condition ``num / den >= t`` rewritten as ``num >= t * den`` with
``den`` kept positive, margins that survive rounding to cents, an objective — and checks
the solution with ``calculate_metrics``, which alone counts as a check. The expert
(:mod:`.expert`) does exactly that in three calls (program, check, submit) and reads
nothing hidden.

Reward (unchanged since v2), relative to naive forecasts on the same instance: the generator writes the
forecasts anyone can write without working on the conditions (last year's drivers,
historical averages, growth extrapolations, the trend forecast, every driver at the
optimistic end of its range; ``simulator.naive_forecasts``). A condition one of them
meets is marked "no partial credit"; at least one condition on every instance is met by
none of them, so none can meet them all. The reward is 0 when an identity or bound is
broken; otherwise 0.6 when every condition is met, plus 0.3 x the fraction of credited
conditions met (counted only once every uncredited condition is met as well), plus 0.1
for few checks, paid only with success. So every naive forecast earns 0 on every
difficulty.

v3 added the computation tools and the imitable expert; instances and rewards are those of
v2, whose expert solved its linear programme off-screen (with the generator's hidden
forecast as a fallback) and was declared not imitable.

v1 paid the fraction of conditions met, so the naive trend forecast earned 0.18-0.25 on
hard (more than on easy) and every driver at the optimistic end of its range 0.7-0.84
(up to a fifth of instances solved); it is retired.
"""

from agentharness.tasks.finance.task import TASK

__all__ = ["TASK"]
