"""finance: forecast next year's financial statements (finance-v2).

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

Reward (v2), relative to naive forecasts on the same instance: the generator writes the
forecasts anyone can write without working on the conditions (last year's drivers,
historical averages, growth extrapolations, the trend forecast, every driver at the
optimistic end of its range; ``simulator.naive_forecasts``). A condition one of them
meets is marked "no partial credit"; at least one condition on every instance is met by
none of them, so none can meet them all. The reward is 0 when an identity or bound is
broken; otherwise 0.6 when every condition is met, plus 0.3 x the fraction of credited
conditions met (counted only once every uncredited condition is met as well), plus 0.1
for few checks, paid only with success. So every naive forecast earns 0 on every
difficulty.

v1 paid the fraction of conditions met, so the naive trend forecast earned 0.18-0.25 on
hard (more than on easy) and every driver at the optimistic end of its range 0.7-0.84
(up to a fifth of instances solved); it is retired.
"""

from agentharness.tasks.finance.task import TASK

__all__ = ["TASK"]
