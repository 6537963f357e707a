"""Pillow rendering of the city map and of tours drawn on it.

The map is the only place the coordinates appear: a square plot with a labelled
coordinate grid (y grows upwards, like a map), a dot per city and its label.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from agentharness.core.messages import png_bytes

Point = tuple[int, int]
Box = tuple[float, float, float, float]

BACKGROUND = (255, 255, 255)
MINOR = (236, 236, 236)
MAJOR = (200, 200, 200)
AXIS = (60, 60, 60)
CITY = (20, 60, 160)
LABEL = (0, 0, 0)
TOUR = (220, 50, 40)
START = (20, 150, 60)


@lru_cache(maxsize=8)
def _font(size: int) -> Any:
    try:
        return ImageFont.load_default(size=size)
    except Exception:  # Pillow without FreeType: fixed-size bitmap font
        return ImageFont.load_default()


def nice_step(span: int, target_ticks: int = 10) -> int:
    """A 1/2/5 x 10^k tick step giving about ``target_ticks`` intervals over ``span``."""
    raw = max(span / target_ticks, 1.0)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return int(m * mag)
    return int(10 * mag)


def grid_steps(span: int) -> tuple[int, int]:
    """(labelled tick step, light grid-line step; 0 for none) for a grid of ``span``."""
    step = nice_step(span)
    mantissa = step // 10 ** math.floor(math.log10(step))
    minor = step // 5 if mantissa == 5 else step // 2
    return step, minor if 0 < minor < step else 0


class _Frame:
    """Maps grid coordinates to pixels."""

    def __init__(self, grid_size: int, image_size: int) -> None:
        self.grid_size = grid_size
        self.size = image_size
        self.left = max(44, image_size // 12)
        self.bottom = max(36, image_size // 16)
        self.top = max(16, image_size // 36)
        self.right = max(16, image_size // 36)
        self.w = image_size - self.left - self.right
        self.h = image_size - self.top - self.bottom

    def px(self, p: Sequence[float]) -> tuple[float, float]:
        x = self.left + p[0] / self.grid_size * self.w
        y = self.top + (1.0 - p[1] / self.grid_size) * self.h
        return x, y

    @property
    def plot_box(self) -> Box:
        return (self.left, self.top, self.left + self.w, self.top + self.h)


def _draw_grid(draw: ImageDraw.ImageDraw, f: _Frame, show_grid: bool) -> None:
    g = f.grid_size
    step, minor = grid_steps(g)
    font = _font(max(10, f.size // 48))
    x0, y0, x1, y1 = f.plot_box
    if show_grid and minor:
        for v in range(0, g + 1, minor):
            if v % step:
                px, _ = f.px((v, 0))
                _, py = f.px((0, v))
                draw.line([(px, y0), (px, y1)], fill=MINOR)
                draw.line([(x0, py), (x1, py)], fill=MINOR)
    for v in range(0, g + 1, step):
        px, _ = f.px((v, 0))
        _, py = f.px((0, v))
        if show_grid:
            draw.line([(px, y0), (px, y1)], fill=MAJOR)
            draw.line([(x0, py), (x1, py)], fill=MAJOR)
        draw.line([(px, y1), (px, y1 + 5)], fill=AXIS)
        draw.line([(x0 - 5, py), (x0, py)], fill=AXIS)
        draw.text((px, y1 + 7), str(v), fill=AXIS, font=font, anchor="mt")
        draw.text((x0 - 8, py), str(v), fill=AXIS, font=font, anchor="rm")
    draw.rectangle(f.plot_box, outline=AXIS, width=1)


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _inside(a: Box, outer: Box) -> bool:
    return a[0] >= outer[0] and a[1] >= outer[1] and a[2] <= outer[2] and a[3] <= outer[3]


def _draw_cities(
    draw: ImageDraw.ImageDraw, f: _Frame, cities: Sequence[Point], labels: Sequence[str]
) -> None:
    r = max(4, f.size // 110)
    font = _font(max(12, f.size // 36))
    centres = [f.px(c) for c in cities]
    dots = [(x - r - 1, y - r - 1, x + r + 1, y + r + 1) for x, y in centres]
    for box in dots:
        draw.ellipse(box, fill=CITY, outline=BACKGROUND)
    placed: list[Box] = []
    for k, ((x, y), label) in enumerate(zip(centres, labels, strict=True)):
        others = dots[:k] + dots[k + 1 :]
        left, top, right, bottom = draw.textbbox((0, 0), label, font=font)
        tw, th = right - left, bottom - top
        gap = r + 2
        # Candidate anchors around the dot; take the first that hides nothing.
        offsets = [
            (gap, -gap - th),
            (-gap - tw, -gap - th),
            (gap, gap),
            (-gap - tw, gap),
            (-tw / 2, -gap - th - 2),
            (-tw / 2, gap + 2),
            (gap + 2, -th / 2),
            (-gap - tw - 2, -th / 2),
        ]
        choice = offsets[0]
        for dx, dy in offsets:
            box = (x + dx - 2, y + dy - 2, x + dx + tw + 2, y + dy + th + 2)
            clash = any(_overlaps(box, d) for d in others) or any(_overlaps(box, p) for p in placed)
            if not clash and _inside(box, (0, 0, f.size, f.size)):
                choice = (dx, dy)
                break
        dx, dy = choice
        box = (x + dx - 2, y + dy - 2, x + dx + tw + 2, y + dy + th + 2)
        placed.append(box)
        draw.rectangle(box, fill=BACKGROUND)
        draw.text((x + dx - left, y + dy - top), label, fill=LABEL, font=font)


def _draw_path(draw: ImageDraw.ImageDraw, f: _Frame, pts: Sequence[Point], closed: bool) -> None:
    if len(pts) < 2:
        return
    width = max(2, f.size // 220)
    seq = [f.px(p) for p in pts]
    legs = list(itertools.pairwise(seq))
    if closed:
        legs.append((seq[-1], seq[0]))
    for a, b in legs:
        draw.line([a, b], fill=TOUR, width=width)
        # arrowhead at the leg's midpoint shows the direction of travel
        mx, my = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
        ang = math.atan2(b[1] - a[1], b[0] - a[0])
        size = 4 + 2 * width
        tip = (mx + size * math.cos(ang), my + size * math.sin(ang))
        left = (mx + size * math.cos(ang + 2.6), my + size * math.sin(ang + 2.6))
        right = (mx + size * math.cos(ang - 2.6), my + size * math.sin(ang - 2.6))
        draw.polygon([tip, left, right], fill=TOUR)


def map_image(
    cities: Sequence[Point],
    labels: Sequence[str],
    grid_size: int,
    image_size: int,
    show_grid: bool,
    path: Sequence[int] | None = None,
    closed: bool = False,
) -> Image.Image:
    """The map; with ``path`` (city indices) the route is drawn under the cities."""
    img = Image.new("RGB", (image_size, image_size), BACKGROUND)
    draw = ImageDraw.Draw(img)
    f = _Frame(grid_size, image_size)
    _draw_grid(draw, f, show_grid)
    if path:
        _draw_path(draw, f, [cities[i] for i in path], closed)
        x, y = f.px(cities[path[0]])
        r = max(4, image_size // 110) + 4
        draw.ellipse((x - r, y - r, x + r, y + r), outline=START, width=3)
    _draw_cities(draw, f, cities, labels)
    return img


@lru_cache(maxsize=64)
def _map_png_cached(
    cities: tuple[Point, ...],
    labels: tuple[str, ...],
    grid_size: int,
    image_size: int,
    show_grid: bool,
) -> bytes:
    return png_bytes(map_image(cities, labels, grid_size, image_size, show_grid))


def map_png(
    cities: Sequence[Sequence[int]],
    labels: Sequence[str],
    grid_size: int,
    image_size: int,
    show_grid: bool,
) -> bytes:
    """PNG bytes of the plain map (cached: the prompt is rebuilt often)."""
    key = tuple((int(c[0]), int(c[1])) for c in cities)
    return _map_png_cached(key, tuple(labels), grid_size, image_size, show_grid)


def tour_png(
    cities: Sequence[Sequence[int]],
    labels: Sequence[str],
    grid_size: int,
    image_size: int,
    show_grid: bool,
    path: Sequence[int],
    closed: bool,
) -> bytes:
    """PNG bytes of the map with a route (closed when it is a full tour)."""
    pts = [(int(c[0]), int(c[1])) for c in cities]
    return png_bytes(map_image(pts, labels, grid_size, image_size, show_grid, path, closed))
