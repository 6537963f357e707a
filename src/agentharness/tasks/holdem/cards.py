"""Cards, hand evaluation and equity (pure functions, no game state).

* Cards are two-character strings (``"Ah"``, ``"Td"``); as integers they are
  ``rank * 4 + suit`` with ranks ``2..A`` = ``0..12`` and suits ``c d h s`` = ``0..3``.
* :func:`hand_values` ranks many 5-7 card hands at once with numpy (category, then the
  ranks that break ties, packed in one integer; higher is stronger). A test checks that
  it orders hands exactly as pokerkit's ``StandardHighHand`` does.
* :func:`equity` is a seeded Monte Carlo estimate of a hand's chance to beat a random
  hand; :func:`showdown_equity` the chance to beat a known hand over the rest of the
  board (exact from the flop on). Both are cached and reproducible: the samplers are
  seeded from the cards.
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


# -- equity ---------------------------------------------------------------------------------

BOT_SAMPLES = 150
EXPERT_SAMPLES = 300
RUNOUT_SAMPLES = 4000


def _canonical_preflop(hole: Sequence[str]) -> tuple[str, ...]:
    """Preflop equity only depends on the ranks and whether the two cards are suited."""
    a, b = sorted(hole, key=lambda c: RANKS.index(c[0]), reverse=True)
    return (a[0] + "s", b[0] + ("s" if a[1] == b[1] else "h"))


def _sample_rows(rng: np.random.Generator, pool: list[int], rows: int, k: int) -> np.ndarray:
    """``rows`` draws of ``k`` distinct cards from ``pool`` (without replacement per row)."""
    keys = rng.random((rows, len(pool)))
    picks = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < len(pool) else np.argsort(keys)
    return np.asarray(pool, dtype=np.int64)[picks]


def equity(hole: Sequence[str], board: Sequence[str], samples: int = EXPERT_SAMPLES) -> float:
    """Monte Carlo chance that ``hole`` beats a uniformly random hand (ties count half).

    The sampler is seeded from the cards, so the estimate is reproducible, and results
    are cached: sessions are replayed by the world, the expert and the reward.
    """
    key = _canonical_preflop(hole) if not board else tuple(hole)
    return _equity(key, tuple(sorted(board)), samples)


@lru_cache(maxsize=200_000)
def _equity(hole: tuple[str, ...], board: tuple[str, ...], samples: int) -> float:
    rng = np.random.default_rng(stable_seed("equity", *hole, "|", *board, samples))
    mine, known = card_ints(hole), card_ints(board)
    used = set(mine) | set(known)
    rest = [i for i in range(52) if i not in used]
    need = 5 - len(known)
    drawn = _sample_rows(rng, rest, samples, 2 + need)
    full_board = np.concatenate([np.tile(known, (samples, 1)), drawn[:, 2:]], axis=1)
    ours = hand_values(np.concatenate([np.tile(mine, (samples, 1)), full_board], axis=1))
    theirs = hand_values(np.concatenate([drawn[:, :2], full_board], axis=1))
    return float(((ours > theirs) + 0.5 * (ours == theirs)).mean())


@lru_cache(maxsize=8)
def _combos(n: int, k: int) -> np.ndarray:
    return np.array(list(itertools.combinations(range(n), k)), dtype=np.int64).reshape(-1, k)


@lru_cache(maxsize=20_000)
def showdown_equity(hole: tuple[str, ...], other: tuple[str, ...], board: tuple[str, ...]) -> float:
    """Chance that ``hole`` beats ``other`` (ties half) over the rest of the board.

    Exact enumeration from the flop on; preflop (1.7 million boards) a seeded Monte Carlo
    estimate with :data:`RUNOUT_SAMPLES` runouts.
    """
    mine, theirs, known = card_ints(hole), card_ints(other), card_ints(board)
    used = set(mine) | set(theirs) | set(known)
    rest = np.array([i for i in range(52) if i not in used], dtype=np.int64)
    need = 5 - len(known)
    if need == 0:
        extra = np.zeros((1, 0), dtype=np.int64)
    elif need <= 2:
        extra = rest[_combos(len(rest), need)]
    else:
        rng = np.random.default_rng(stable_seed("runout", *hole, "|", *other, "|", *board))
        extra = _sample_rows(rng, rest.tolist(), RUNOUT_SAMPLES, need)
    rows = extra.shape[0]
    full = np.concatenate([np.tile(known, (rows, 1)).reshape(rows, len(known)), extra], axis=1)
    a = hand_values(np.concatenate([np.tile(mine, (rows, 1)), full], axis=1))
    b = hand_values(np.concatenate([np.tile(theirs, (rows, 1)), full], axis=1))
    return float(((a > b) + 0.5 * (a == b)).mean())
