"""holdem: heads-up no-limit Texas hold'em against a bot, seen through table images.

The agent plays a session of hands (stacks carry over, the button alternates) against a
bot of a given style (passive, loose, tight or aggressive) on pokerkit's no-limit hold'em
engine, which enforces the rules: legal actions, minimum raises, all-ins and showdowns.
Each observation is a rendered table image (hole cards, board, pot, stacks, bets, button,
the bot's last action and this hand's actions); the texts only say whose turn it is and
the legal actions with their amounts. Tools: ``act(action, amount)`` and ``view_table()``.
Every hand is dealt from its own seeded shuffle and the bot's randomness is seeded, so a
session is a function of the seed and the agent's actions; the generator keeps a card
sequence only when the equity-based reference policy wins at least 20 big blinds with it.
Reward: a sigmoid of the net chips over the starting stack (all-in adjusted: a hand all-in
before the river counts by its equity), re-computed by replaying the session, with a small
part for legal actions and scaled by the share of hands played.
"""

from agentharness.tasks.holdem.task import TASK

__all__ = ["TASK"]
