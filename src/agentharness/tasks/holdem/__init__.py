"""holdem: heads-up no-limit Texas hold'em against a bot, seen through table images.

The agent plays a session of hands against a bot of a given style (passive, loose, tight
or aggressive) on pokerkit's no-limit hold'em engine, which enforces the rules: legal
actions, minimum raises, all-ins and showdowns. Both players start every hand with the
same stack (topped up between hands) and the button alternates. Each observation is a
rendered table image (hole cards, board, pot, stacks, bets, button, the bot's last action
and this hand's actions); the texts only say whose turn it is and the legal actions with
their amounts. Tools: ``act(action, amount)`` and ``view_table()``.

Every hand is dealt from its own seeded shuffle, one deal per seed (no deal is kept or
dropped for how it plays), and the bot's randomness is seeded, so a session is a
function of the seed and the agent's actions. The generator plays the same deals with
the lazy baselines that never look at their cards (check/fold, check/call, all-in every
time, call-or-all-in) and with the reference policy, which plays against the bot's
exact range (the bot's rule is known).

Reward (v2), re-computed by replaying the session: the agent's net chips with the
showdowns' luck taken out (a showdown counts by the agent's average result against every
hand the bot could hold, weighted by how likely the bot's known rule plays each the way
it did; folds count as they fell), minus the best lazy baseline's on the same deals, as a
share of the reference's margin over that baseline (at least ``min_edge_bb`` big blinds),
clipped to [0, 1] and scaled by the share of hands played. Breaking even, acting legally
or playing without the cards earns 0 (v1 paid about 0.57 for that).

Modules: ``cards`` (evaluation, hand strength), ``bots`` (the bot), ``simulator`` (the pokerkit
session), ``policies`` (reference, lazy and blind rules), ``blind`` (the text-only
policy), and the four layers.
"""

from agentharness.tasks.holdem.task import TASK

__all__ = ["TASK"]
