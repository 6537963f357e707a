"""finance: forecast next year's financial statements.

The agent sees three years of a synthetic company's income statement, balance sheet and
cash flow statement (28 line items, whole USD thousands, internally consistent) and
forecasts the next year. The forecast must satisfy the accounting identities (within a
stated tolerance) and plausibility bounds (driver ranges, tax and interest rates, a cash
floor), and a set of ratios (margins, ROE, ROA, liquidity, leverage, turnover, cash
conversion, ...) must each match or beat their best historical value.
``calculate_metrics`` reports every violated identity and bound, every ratio and each
condition's gap; ``submit_forecast`` is the answer. Reward: fraction of conditions met,
zero when an identity or bound is broken. Harder difficulties bring more conditions,
tighter bounds and ratios that pull against each other. Every instance is built around a
hidden forecast found by linear programming.
"""

from agentharness.tasks.finance.task import TASK

__all__ = ["TASK"]
