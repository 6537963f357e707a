"""Cards, hand evaluation and equity (pure functions, no game state).

* Cards are two-character strings (``"Ah"``, ``"Td"``); as integers they are
  ``rank * 4 + suit`` with ranks ``2..A`` = ``0..12`` and suits ``c d h s`` = ``0..3``.
* :func:`hand_values` ranks many 5-7 card hands at once with numpy (category, then the
  ranks that break ties, packed in one integer; higher is stronger). A test checks that
  it orders hands exactly as pokerkit's ``StandardHighHand`` does.
* :func:`board_values` ranks all 1326 two-card hands on one board at once;
  :func:`strength_table` turns that into every hand's equity against a random hand (the
  bots' and the reference's hand strength) and :func:`outcomes_against_all` into one
  hand's showdown result against every other. All are cached and reproducible: the
  sampled runouts are seeded from the cards.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

RANKS = "23456789TJQKA"
SUITS = "cdhs"
FULL_DECK: tuple[str, ...] = tuple(r + s for r in RANKS for s in SUITS)
CARDS_PER_HAND = 12  # 2 + 2 hole cards, 3 burns, 5 board cards
_CARD_INDEX = {c: i for i, c in enumerate(FULL_DECK)}

# hand categories, weakest first (pokerkit's labels)
CATEGORIES = (
    "High card",
    "One pair",
    "Two pair",
    "Three of a kind",
    "Straight",
    "Flush",
    "Full house",
    "Four of a kind",
    "Straight flush",
)
_CATEGORY_SHIFT = 20  # five 4-bit tie-break ranks below the category


def stable_seed(*parts: object) -> int:
    """A process-independent integer seed (``hash()`` of a str is salted per process)."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def shuffled_hand_cards(rng: random.Random) -> list[str]:
    """The 12 cards one hand needs, from a freshly shuffled deck."""
    deck = list(FULL_DECK)
    rng.shuffle(deck)
    return deck[:CARDS_PER_HAND]


def card_ints(cards: Sequence[str]) -> list[int]:
    return [_CARD_INDEX[c] for c in cards]


# -- evaluation ---------------------------------------------------------------------------

_RANK_IDS = np.arange(13)
# 5-high (wheel) to ace-high straights as 13-bit rank masks; the wheel's ace is bit 12
_STRAIGHTS = [(hi, sum(1 << r for r in range(hi - 4, hi + 1))) for hi in range(12, 3, -1)]
_WHEEL = (1 << 12) | 0b1111
_RANK_WEIGHTS = 5 ** np.arange(13, dtype=np.int64)  # base 5: at most 4 cards of a rank


def _top(mask: np.ndarray, k: int, exclude: np.ndarray | None = None) -> np.ndarray:
    """The ``k`` highest ranks where ``mask`` holds (``-1`` where fewer), shape (N, k)."""
    if exclude is not None:
        mask = mask & (_RANK_IDS[None, :] != exclude[:, None])
    keyed = np.where(mask, _RANK_IDS[None, :], -1)
    return -np.sort(-keyed, axis=1)[:, :k]


def _straight_high(bits: np.ndarray) -> np.ndarray:
    """The high rank of the best straight in 13-bit rank masks, ``-1`` when none."""
    high = np.full(bits.shape, -1, dtype=np.int64)
    for hi, m in _STRAIGHTS:
        high = np.where((high < 0) & ((bits & m) == m), hi, high)
    return np.where((high < 0) & ((bits & _WHEEL) == _WHEEL), 3, high)


def _pack(category: int | np.ndarray, ranks: np.ndarray) -> np.ndarray:
    value = np.asarray(category, dtype=np.int64) << _CATEGORY_SHIFT
    for i in range(ranks.shape[1]):
        value = value + ((ranks[:, i].astype(np.int64) + 1) << (4 * (4 - i)))
    return value


def _evaluate(counts: np.ndarray, suited: bool) -> np.ndarray:
    """Direct evaluation from rank counts (N, 13) of 5-7 cards; builds the lookup tables.

    ``suited``: every card is of one suit (then ``counts`` is 0/1), else no five cards
    share a suit.
    """
    counts = np.asarray(counts, dtype=np.int64)
    n = counts.shape[0]
    present_bits = ((counts > 0) * (1 << _RANK_IDS)[None, :]).sum(axis=1)
    has_flush = np.full(n, suited)
    flush_mask = (counts > 0) & suited
    flush_bits = np.where(has_flush, present_bits, 0)

    sf_high = _straight_high(flush_bits)
    st_high = _straight_high(present_bits)
    quads = _top(counts >= 4, 1)[:, 0]
    trips = _top(counts >= 3, 1)[:, 0]
    pair_for_boat = _top(counts >= 2, 1, exclude=trips)[:, 0]
    pairs = _top(counts >= 2, 2)

    value = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)

    def assign(cond: np.ndarray, v: np.ndarray) -> None:
        nonlocal value, done
        take = cond & ~done
        value = np.where(take, v, value)
        done = done | take

    assign(sf_high >= 0, _pack(8, sf_high[:, None]))
    kicker_q = _top(counts > 0, 1, exclude=quads)
    assign(quads >= 0, _pack(7, np.concatenate([quads[:, None], kicker_q], axis=1)))
    assign(
        (trips >= 0) & (pair_for_boat >= 0),
        _pack(6, np.stack([trips, pair_for_boat], axis=1)),
    )
    assign(has_flush, _pack(5, _top(flush_mask, 5)))
    assign(st_high >= 0, _pack(4, st_high[:, None]))
    kick_t = _top(counts > 0, 2, exclude=trips)
    assign(trips >= 0, _pack(3, np.concatenate([trips[:, None], kick_t], axis=1)))
    two = pairs[:, 1] >= 0
    rest = (
        (counts > 0) & (_RANK_IDS[None, :] != pairs[:, :1]) & (_RANK_IDS[None, :] != pairs[:, 1:2])
    )
    kick_2 = _top(rest, 1)
    assign(two, _pack(2, np.concatenate([pairs, kick_2], axis=1)))
    kick_1 = _top(counts > 0, 3, exclude=pairs[:, 0])
    assign(pairs[:, 0] >= 0, _pack(1, np.concatenate([pairs[:, :1], kick_1], axis=1)))
    assign(~done, _pack(0, _top(counts > 0, 5)))
    return value


def _count_vectors() -> np.ndarray:
    """Every rank-count vector (13 ranks, at most 4 each) of 5 to 7 cards."""
    vectors = np.zeros((1, 0), dtype=np.int64)
    for _ in range(13):
        grown = [np.hstack([vectors, np.full((len(vectors), 1), c)]) for c in range(5)]
        vectors = np.vstack(grown)
        vectors = vectors[vectors.sum(axis=1) <= 7]
    return vectors[vectors.sum(axis=1) >= 5]


@lru_cache(maxsize=1)
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lookup tables: the value of every rank multiset of 5-7 cards without a flush,
    sorted by its key (base-5 digits of the rank counts); and the value of every
    13-bit mask of 5-7 ranks of one suit."""
    counts = _count_vectors()
    keys = counts @ _RANK_WEIGHTS
    order = np.argsort(keys)
    plain = _evaluate(counts[order], suited=False)
    masks = np.array([m for m in range(1 << 13) if 5 <= m.bit_count() <= 7])
    bits = (masks[:, None] >> _RANK_IDS[None, :]) & 1
    flush = np.zeros(1 << 13, dtype=np.int64)
    flush[masks] = _evaluate(bits, suited=True)
    return keys[order], plain, flush


def hand_values(cards: np.ndarray) -> np.ndarray:
    """The strength of the best 5-card hand in each row of card ints (N, 5..7).

    Higher is stronger; equal values are ties. ``value >> 20`` is the category index
    into :data:`CATEGORIES`. Table lookups: by the rank multiset, or by the suited ranks
    when five or more cards share a suit (with at most seven cards a flush excludes
    quads and full houses).
    """
    cards = np.asarray(cards, dtype=np.int64)
    keys, values, flush = _tables()
    ranks, suits = cards >> 2, cards & 3
    plain = values[np.searchsorted(keys, _RANK_WEIGHTS[ranks].sum(axis=1))]
    suited_bits = np.left_shift(1, ranks)
    best = plain
    for suit in range(4):
        of_suit = suits == suit
        five = of_suit.sum(axis=1) >= 5
        if five.any():
            mask = np.where(of_suit, suited_bits, 0).sum(axis=1)
            best = np.where(five, flush[mask], best)
    return best


def hand_value(cards: Sequence[str]) -> int:
    """:func:`hand_values` of one hand given as card strings."""
    return int(hand_values(np.array([card_ints(cards)]))[0])


def describe_hand(hole: Sequence[str], board: Sequence[str]) -> str:
    """The category of the best hand (e.g. 'Two pair'), for result banners."""
    return CATEGORIES[hand_value([*hole, *board]) >> _CATEGORY_SHIFT]


# -- every two-card hand at once --------------------------------------------------------------
#
# The bot's hand strength, the reference's and the reward's showdown averages need the
# value of all 1326 two-card hands on one board at a time. With the board fixed, a hand's
# rank key is the board's plus its two cards', so one table lookup per hand suffices.

COMBOS = np.array(list(itertools.combinations(range(52), 2)), dtype=np.int64)  # (1326, 2)
N_COMBOS = len(COMBOS)
_COMBO_INDEX = {(int(a), int(b)): i for i, (a, b) in enumerate(COMBOS)}
# The plain (no flush) value only depends on the two ranks: 91 rank pairs.
_RANK_PAIRS = np.array([(a, b) for a in range(13) for b in range(a, 13)], dtype=np.int64)
_RANK_PAIR_KEYS = _RANK_WEIGHTS[_RANK_PAIRS].sum(axis=1)
_PAIR_OF = {(int(a), int(b)): i for i, (a, b) in enumerate(_RANK_PAIRS)}
_COMBO_PAIR = np.array(
    [_PAIR_OF[(min(a >> 2, b >> 2), max(a >> 2, b >> 2))] for a, b in COMBOS], dtype=np.int64
)
_COMBO_SUIT_BITS = np.stack(
    [((COMBOS & 3) == s).astype(np.int64) << (COMBOS >> 2) for s in range(4)]
).sum(axis=2)  # (4, 1326): the combo's rank bits in each suit
_COMBO_SUIT_COUNT = np.stack([((COMBOS & 3) == s).sum(axis=1) for s in range(4)])  # (4, 1326)
_CARD_IN_COMBO = np.zeros((52, N_COMBOS), dtype=bool)
_CARD_IN_COMBO[COMBOS[:, 0], np.arange(N_COMBOS)] = True
_CARD_IN_COMBO[COMBOS[:, 1], np.arange(N_COMBOS)] = True


def combo_index(hole: Sequence[str]) -> int:
    """The index of a two-card hand in :data:`COMBOS`."""
    a, b = sorted(card_ints(hole))
    return _COMBO_INDEX[(a, b)]


def combos_without(cards: Sequence[int]) -> np.ndarray:
    """Which two-card hands share no card with ``cards`` (bool, 1326)."""
    if not len(cards):
        return np.ones(N_COMBOS, dtype=bool)
    return np.asarray(~_CARD_IN_COMBO[list(cards)].any(axis=0), dtype=bool)


def boards_values(boards: np.ndarray) -> np.ndarray:
    """The value of every two-card hand on each five-card board (B, 5 card ints): an array
    (B, 1326), -1 for the hands that share a card with their board."""
    keys, values, flush = _tables()
    boards = np.asarray(boards, dtype=np.int64).reshape(-1, 5)
    ranks, suits = boards >> 2, boards & 3
    board_keys = _RANK_WEIGHTS[ranks].sum(axis=1)
    # rank pairs that would need five of a rank never occur in a valid hand; clip them
    idx = np.searchsorted(keys, board_keys[:, None] + _RANK_PAIR_KEYS[None, :])
    out = values[np.minimum(idx, len(keys) - 1)][:, _COMBO_PAIR]
    for suit in range(4):
        of_suit = suits == suit
        count = of_suit.sum(axis=1)
        if not (count >= 3).any():
            continue
        bits = np.where(of_suit, np.left_shift(1, ranks), 0).sum(axis=1)
        made = (count[:, None] + _COMBO_SUIT_COUNT[suit][None, :] >= 5) & (count >= 3)[:, None]
        out = np.where(made, flush[bits[:, None] | _COMBO_SUIT_BITS[suit][None, :]], out)
    blocked = _CARD_IN_COMBO[boards].any(axis=1)
    return np.where(blocked, -1, out)


def board_values(board: Sequence[int]) -> np.ndarray:
    """:func:`boards_values` of one five-card board (card ints): 1326 values."""
    return boards_values(np.array([list(board)]))[0]


def _percentiles(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Each valid hand's chance to beat a random valid hand (ties half); 0 elsewhere."""
    ranked = np.sort(values[valid])
    below = np.searchsorted(ranked, values, "left")
    upto = np.searchsorted(ranked, values, "right")
    n = max(len(ranked) - 1, 1)
    return np.where(valid, (below + 0.5 * (upto - below - 1)) / n, 0.0)


def _runouts(board: Sequence[int], count: int, seed: object) -> list[list[int]]:
    """Five-card completions of ``board``: all of them for a turn, else ``count`` sampled."""
    rest = [c for c in range(52) if c not in board]
    need = 5 - len(board)
    if need == 0:
        return [list(board)]
    if need == 1:
        return [[*board, c] for c in rest]
    rng = random.Random(stable_seed("runouts", seed, *board))
    return [[*board, *rng.sample(rest, need)] for _ in range(count)]


FLOP_RUNOUTS = 60
PREFLOP_BOARDS = 400
RUNOUT_DRAWS = 150


@lru_cache(maxsize=4096)
def strength_table(board: tuple[str, ...]) -> np.ndarray:
    """Every two-card hand's equity against a random hand on ``board`` (1326 floats).

    Exact on the river (its rank among all hands) and the turn (averaged over every
    river); on the flop averaged over :data:`FLOP_RUNOUTS` seeded runouts and preflop over
    :data:`PREFLOP_BOARDS` seeded boards. Blockers between the two hands are ignored. This
    is the bots' hand strength (and the reference's), so the reward can evaluate the
    bot's strategy for every hand it might hold.
    """
    ints = card_ints(board)
    fulls = _runouts(ints, PREFLOP_BOARDS if not ints else FLOP_RUNOUTS, "strength")
    total = np.zeros(N_COMBOS)
    count = np.zeros(N_COMBOS)
    for values in boards_values(np.array(fulls)):
        valid = values >= 0
        total += _percentiles(values, valid)
        count += valid
    return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def strength(hole: Sequence[str], board: Sequence[str]) -> float:
    """:func:`strength_table` for one hand (its equity against a random hand)."""
    return float(strength_table(tuple(board))[combo_index(hole)])


@lru_cache(maxsize=2048)
def outcomes_against_all(hole: tuple[str, ...], board: tuple[str, ...]) -> np.ndarray:
    """``hole``'s showdown result against every two-card hand (1 win, 0.5 tie, 0 loss),
    averaged over the rest of the board: every river from the turn, else
    :data:`RUNOUT_DRAWS` seeded runouts (an unbiased estimate; the same runouts for every
    hand). 0 for the hands that share a card with ``hole`` or the board."""
    mine = combo_index(hole)
    blocked = card_ints(hole)
    ints = card_ints(board)
    dealt = [*ints, *blocked]
    if len(ints) == 4:
        fulls = [[*ints, c] for c in range(52) if c not in dealt]
    elif len(ints) == 5:
        fulls = [ints]
    else:
        rest = [c for c in range(52) if c not in dealt]
        rng = random.Random(stable_seed("outcomes", *hole, "|", *board))
        fulls = [[*ints, *rng.sample(rest, 5 - len(ints))] for _ in range(RUNOUT_DRAWS)]
    values = boards_values(np.array(fulls))
    ours = values[:, mine : mine + 1]
    valid = values >= 0
    total = np.where(valid, (ours > values) + 0.5 * (ours == values), 0.0).sum(axis=0)
    count = valid.sum(axis=0)
    usable = combos_without([*blocked, *ints]) & (count > 0)
    return np.where(usable, total / np.maximum(count, 1), 0.0)
