"""Euclidean TSP domain code: city sampling, tour checking, exact and heuristic solvers.

Pure numeric code with no agent or message types. A tour is a sequence of city
indices visiting every city once; it is closed (the last city returns to the first).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Held-Karp is O(2^n n^2): 16 cities take well under a second with numpy, 20 would not.
EXACT_LIMIT = 16

Point = tuple[int, int]


class TourProblem(ValueError):
    """A tour that is not a permutation of the cities; the message says what is wrong."""


def sample_cities(
    rng: np.random.Generator, n: int, grid_size: int, min_separation: float, border: int
) -> list[Point] | None:
    """``n`` distinct integer points in ``[border, grid_size - border]^2``, pairwise
    at least ``min_separation`` apart, or ``None`` when the draw got stuck."""
    lo, hi = border, grid_size - border
    points: list[Point] = []
    for _ in range(200 * n):
        if len(points) == n:
            break
        p = (int(rng.integers(lo, hi + 1)), int(rng.integers(lo, hi + 1)))
        if all(math.dist(p, q) >= min_separation for q in points):
            points.append(p)
    return points if len(points) == n else None


def distance_matrix(points: Sequence[Point]) -> np.ndarray:
    xy = np.asarray(points, dtype=float)
    diff = xy[:, None, :] - xy[None, :, :]
    return np.sqrt((diff**2).sum(axis=-1))


def tour_length(points: Sequence[Point], tour: Sequence[int]) -> float:
    """Length of the closed tour through ``points`` in ``tour`` order."""
    total = 0.0
    for a, b in zip(tour, [*tour[1:], tour[0]], strict=True):
        total += math.dist(points[a], points[b])
    if not math.isfinite(total):
        raise TourProblem("tour length is not finite")
    return total


@dataclass(frozen=True)
class OrderCheck:
    """Which labels of an order are unknown, duplicated or missing."""

    unknown: list[str]
    duplicates: list[str]
    missing: list[str]

    @property
    def valid(self) -> bool:
        return not (self.unknown or self.duplicates or self.missing)

    def describe(self) -> str:
        parts = []
        if self.unknown:
            parts.append(f"unknown label(s) {', '.join(self.unknown)}")
        if self.duplicates:
            parts.append(f"visited more than once: {', '.join(self.duplicates)}")
        if self.missing:
            parts.append(f"missing: {', '.join(self.missing)}")
        return "; ".join(parts) or "valid"


def normalize_order(order: Sequence[str]) -> list[str]:
    """Trim and upper-case labels; drop a closing repeat of the first city (A..A)."""
    out = [str(x).strip().upper() for x in order]
    if len(out) >= 2 and out[0] == out[-1]:
        out = out[:-1]
    return out


def check_order(
    order: Sequence[str], labels: Sequence[str], *, partial: bool = False
) -> OrderCheck:
    """Compare an (already normalised) order with the city labels.

    With ``partial`` the order may leave cities out (a path, not a tour).
    """
    known = set(labels)
    seen: set[str] = set()
    unknown: list[str] = []
    duplicates: list[str] = []
    for label in order:
        if label not in known:
            if label not in unknown:
                unknown.append(label)
        elif label in seen:
            if label not in duplicates:
                duplicates.append(label)
        seen.add(label)
    missing = [] if partial else [lab for lab in labels if lab not in seen]
    return OrderCheck(unknown=unknown, duplicates=duplicates, missing=missing)


def order_to_indices(
    order: Sequence[str], labels: Sequence[str], *, partial: bool = False
) -> list[int]:
    """City indices of a valid order; raises :class:`TourProblem` naming what is wrong."""
    check = check_order(order, labels, partial=partial)
    if not check.valid:
        raise TourProblem(check.describe())
    index = {lab: i for i, lab in enumerate(labels)}
    return [index[lab] for lab in order]


def _segments_cross(p1: Point, p2: Point, p3: Point, p4: Point) -> bool:
    """Proper crossing of segments p1p2 and p3p4 (shared endpoints do not count)."""

    def orient(a: Point, b: Point, c: Point) -> int:
        v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        return (v > 0) - (v < 0)

    if len({p1, p2, p3, p4}) < 4:
        return False
    o1, o2 = orient(p1, p2, p3), orient(p1, p2, p4)
    o3, o4 = orient(p3, p4, p1), orient(p3, p4, p2)
    return o1 * o2 < 0 and o3 * o4 < 0


def crossing_edges(points: Sequence[Point], tour: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """Pairs of tour edges that cross; an optimal Euclidean tour has none."""
    n = len(tour)
    edges = [(tour[i], tour[(i + 1) % n]) for i in range(n)]
    out = []
    for i in range(n):
        for j in range(i + 2, n):
            if i == 0 and j == n - 1:
                continue  # adjacent through the closing edge
            a, b = edges[i]
            c, d = edges[j]
            if _segments_cross(points[a], points[b], points[c], points[d]):
                out.append((a, b, c, d))
    return out


def held_karp(dist: np.ndarray) -> tuple[list[int], float]:
    """Exact shortest closed tour starting at city 0 (Held-Karp dynamic programming)."""
    n = dist.shape[0]
    if n <= 3:
        tour = list(range(n))
        return tour, _length(dist, tour)
    m = n - 1  # cities 1..n-1 are bits 0..m-1
    size = 1 << m
    dp = np.full((size, m), np.inf)
    parent = np.full((size, m), -1, dtype=np.int64)
    for j in range(m):
        dp[1 << j, j] = dist[0, j + 1]
    popcount = np.array([bin(s).count("1") for s in range(size)])
    sub = dist[1:, 1:]
    for k in range(2, m + 1):
        masks = np.nonzero(popcount == k)[0]
        for j in range(m):
            bit = 1 << j
            with_j = masks[(masks & bit) != 0]
            prev = with_j ^ bit
            # dp[prev, i] is inf for i not in prev, so the min only sees valid predecessors
            cand = dp[prev] + sub[:, j][None, :]
            best = np.argmin(cand, axis=1)
            dp[with_j, j] = cand[np.arange(len(with_j)), best]
            parent[with_j, j] = best
    full = size - 1
    closing = dp[full] + dist[1:, 0]
    last = int(np.argmin(closing))
    tour_rev = []
    mask, j = full, last
    while j >= 0:
        tour_rev.append(j + 1)
        pj = int(parent[mask, j])
        mask ^= 1 << j
        j = pj
    tour = [0, *reversed(tour_rev)]
    return tour, _length(dist, tour)


def _length(dist: np.ndarray, tour: Sequence[int]) -> float:
    idx = np.asarray(tour)
    return float(dist[idx, np.roll(idx, -1)].sum())


def _two_opt(dist: np.ndarray, tour: list[int]) -> bool:
    n = len(tour)
    improved = False
    for i in range(n - 1):
        for j in range(i + 2, n if i > 0 else n - 1):
            a, b = tour[i], tour[i + 1]
            c, d = tour[j], tour[(j + 1) % n]
            delta = dist[a, c] + dist[b, d] - dist[a, b] - dist[c, d]
            if delta < -1e-9:
                tour[i + 1 : j + 1] = reversed(tour[i + 1 : j + 1])
                improved = True
    return improved


def _or_opt(dist: np.ndarray, tour: list[int]) -> bool:
    """Move a run of 1-3 consecutive cities (possibly reversed) to a better place."""
    n = len(tour)
    for seg in (1, 2, 3):
        if seg >= n - 2:
            break
        for i in range(n):
            run = [tour[(i + k) % n] for k in range(seg)]
            prev, nxt = tour[(i - 1) % n], tour[(i + seg) % n]
            gain = dist[prev, run[0]] + dist[run[-1], nxt] - dist[prev, nxt]
            rest = [c for c in tour if c not in run]
            best_delta, best_at, best_rev = -1e-9, -1, False
            for p in range(len(rest)):
                u, v = rest[p], rest[(p + 1) % len(rest)]
                for rev in (False, True):
                    first, last = (run[-1], run[0]) if rev else (run[0], run[-1])
                    delta = dist[u, first] + dist[last, v] - dist[u, v] - gain
                    if delta < best_delta:
                        best_delta, best_at, best_rev = delta, p, rev
            if best_at >= 0:
                ins = run[::-1] if best_rev else run
                tour[:] = rest[: best_at + 1] + ins + rest[best_at + 1 :]
                return True
    return False


def local_search(dist: np.ndarray, tour: list[int]) -> list[int]:
    """2-opt and or-opt until neither improves."""
    tour = list(tour)
    for _ in range(1000):
        if not (_two_opt(dist, tour) | _or_opt(dist, tour)):
            break
    return tour


def _nearest_neighbour(dist: np.ndarray, start: int) -> list[int]:
    n = dist.shape[0]
    tour = [start]
    left = set(range(n)) - {start}
    while left:
        cur = tour[-1]
        nxt = min(left, key=lambda c: (dist[cur, c], c))
        tour.append(nxt)
        left.remove(nxt)
    return tour


def heuristic_tour(
    dist: np.ndarray, rng: np.random.Generator, restarts: int = 8
) -> tuple[list[int], float]:
    """Best tour from nearest-neighbour and random starts improved by local search."""
    n = dist.shape[0]
    starts = [_nearest_neighbour(dist, s) for s in range(n)]
    starts += [[int(c) for c in rng.permutation(n)] for _ in range(restarts)]
    best: list[int] = []
    best_len = math.inf
    for start in starts:
        tour = local_search(dist, start)
        length = _length(dist, tour)
        if length < best_len - 1e-9:
            best, best_len = tour, length
    return canonical(best), best_len


def solve(points: Sequence[Point], rng: np.random.Generator) -> tuple[list[int], float, str]:
    """The optimal tour (Held-Karp, n <= EXACT_LIMIT) or the best-known heuristic one.

    Returns ``(tour, length, method)`` with the tour in canonical form.
    """
    dist = distance_matrix(points)
    if len(points) <= EXACT_LIMIT:
        tour, length = held_karp(dist)
        return canonical(tour), length, "held-karp"
    tour, length = heuristic_tour(dist, rng)
    return tour, length, "2opt+oropt"


def canonical(tour: Sequence[int]) -> list[int]:
    """Rotate to start at city 0 and pick the direction whose second city is smaller."""
    n = len(tour)
    k = list(tour).index(0)
    fwd = [tour[(k + i) % n] for i in range(n)]
    if n > 2 and fwd[-1] < fwd[1]:
        fwd = [fwd[0], *reversed(fwd[1:])]
    return fwd
