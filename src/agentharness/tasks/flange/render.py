"""Pillow rendering of the flange's engineering drawing.

The drawing is the only place the agent sees the instance's dimensions, load,
displacement limit, cost limit and permitted materials: a front view with diameter callouts, a
section view with the load arrows and the (to-be-designed) thickness, notes and a title
block. Views are drawn to scale; the printed numbers are authoritative.
"""

from __future__ import annotations

import math
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from agentharness.core.messages import png_bytes
from agentharness.tasks.flange.problem import Drawing
from agentharness.tasks.flange.simulator import MATERIALS

WIDTH, HEIGHT = 1200, 820
INK = (20, 20, 20)
THIN = (70, 70, 70)
CENTER = (40, 90, 160)
LOAD = (190, 30, 30)
PAPER = (252, 252, 247)

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


@lru_cache(maxsize=8)
def _font(size: int) -> tuple[Font, bool]:
    """A font and whether it has the diameter sign; DejaVu if installed, else Pillow's."""
    for name in ("DejaVuSans.ttf", "DejaVuSansCondensed.ttf", "LiberationSans-Regular.ttf"):
        try:
            return ImageFont.truetype(name, size), True
        except OSError:
            continue
    return ImageFont.load_default(size=size), False


def _dia(size: int = 18) -> str:
    return "Ø" if _font(size)[1] else "DIA "


def _text(
    draw: ImageDraw.ImageDraw,
    xy: tuple[float, float],
    text: str,
    size: int = 18,
    fill: tuple[int, int, int] = INK,
    anchor: str = "la",
) -> None:
    draw.text(xy, text, font=_font(size)[0], fill=fill, anchor=anchor)


def _dashed_line(
    draw: ImageDraw.ImageDraw,
    p: tuple[float, float],
    q: tuple[float, float],
    pattern: tuple[float, ...] = (18, 4, 3, 4),
    fill: tuple[int, int, int] = CENTER,
    width: int = 1,
) -> None:
    length = math.dist(p, q)
    if length == 0:
        return
    ux, uy = (q[0] - p[0]) / length, (q[1] - p[1]) / length
    pos, i = 0.0, 0
    while pos < length:
        seg = min(pattern[i % len(pattern)], length - pos)
        if i % 2 == 0:
            draw.line(
                [
                    (p[0] + ux * pos, p[1] + uy * pos),
                    (p[0] + ux * (pos + seg), p[1] + uy * (pos + seg)),
                ],
                fill=fill,
                width=width,
            )
        pos += seg
        i += 1


def _dashed_circle(
    draw: ImageDraw.ImageDraw, c: tuple[float, float], r: float, fill: tuple[int, int, int] = CENTER
) -> None:
    steps = max(24, int(2 * math.pi * r / 6))
    for k in range(steps):
        if k % 4 == 3:
            continue
        a0, a1 = 2 * math.pi * k / steps, 2 * math.pi * (k + 1) / steps
        draw.line(
            [
                (c[0] + r * math.cos(a0), c[1] + r * math.sin(a0)),
                (c[0] + r * math.cos(a1), c[1] + r * math.sin(a1)),
            ],
            fill=fill,
            width=1,
        )


def _arrow(
    draw: ImageDraw.ImageDraw,
    tip: tuple[float, float],
    tail: tuple[float, float],
    fill: tuple[int, int, int] = INK,
    size: float = 11,
    width: int = 1,
) -> None:
    draw.line([tail, tip], fill=fill, width=width)
    ang = math.atan2(tip[1] - tail[1], tip[0] - tail[0])
    left = (tip[0] - size * math.cos(ang - 0.35), tip[1] - size * math.sin(ang - 0.35))
    right = (tip[0] - size * math.cos(ang + 0.35), tip[1] - size * math.sin(ang + 0.35))
    draw.polygon([tip, left, right], fill=fill)


def _diameter_callout(
    draw: ImageDraw.ImageDraw,
    c: tuple[float, float],
    r: float,
    angle_deg: float,
    label: str,
    reach: float,
) -> None:
    """Leader from outside the view to the circle at ``angle_deg``, with a shoulder."""
    ang = math.radians(angle_deg)
    tip = (c[0] + r * math.cos(ang), c[1] - r * math.sin(ang))
    elbow = (c[0] + (r + reach) * math.cos(ang), c[1] - (r + reach) * math.sin(ang))
    right = math.cos(ang) >= 0
    shoulder = (elbow[0] + (34 if right else -34), elbow[1])
    draw.line([shoulder, elbow], fill=INK, width=1)
    _arrow(draw, tip, elbow)
    _text(
        draw,
        (shoulder[0] + (4 if right else -4), shoulder[1]),
        label,
        19,
        anchor="lm" if right else "rm",
    )


def _vertical_dimension(
    draw: ImageDraw.ImageDraw, x: float, y_top: float, y_bot: float, x_from: float, label: str
) -> None:
    draw.line([(x_from + 4, y_top), (x + 8, y_top)], fill=THIN, width=1)
    draw.line([(x_from + 4, y_bot), (x + 8, y_bot)], fill=THIN, width=1)
    mid = (y_top + y_bot) / 2
    _arrow(draw, (x, y_top), (x, mid))
    _arrow(draw, (x, y_bot), (x, mid))
    _text(draw, (x + 6, mid), label, 18, anchor="lm")


def _hatch(
    draw: ImageDraw.ImageDraw, box: tuple[float, float, float, float], step: float = 9
) -> None:
    x0, y0, x1, y1 = box
    draw.rectangle(box, outline=INK, width=2)
    k = x0 - (y1 - y0)
    while k < x1:
        # 45-degree lines clipped to the box
        pa = (k, y1)
        pb = (k + (y1 - y0), y0)
        if pa[0] < x0:
            pa = (x0, y1 - (x0 - k))
        if pb[0] > x1:
            pb = (x1, y0 + (pb[0] - x1))
        if pa[0] <= pb[0]:
            draw.line([pa, pb], fill=THIN, width=1)
        k += step


def _wrap(text: str, size: int, width: float) -> list[str]:
    """Greedy word wrap; continuation lines are indented under the note number."""
    font = _font(size)[0]
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        trial = f"{current} {word}" if current else word
        if current and font.getlength(trial) > width:
            lines.append(current)
            current = "    " + word
        else:
            current = trial
    lines.append(current)
    return lines


def render_drawing(drawing: Drawing) -> Image.Image:
    """The engineering drawing of one instance as a Pillow image."""
    img = Image.new("RGB", (WIDTH, HEIGHT), PAPER)
    draw = ImageDraw.Draw(img)
    dia = _dia()
    outer, bore, bcd = drawing.outer_d, drawing.bore_d, drawing.bcd
    draw.rectangle((8, 8, WIDTH - 9, HEIGHT - 9), outline=INK, width=3)

    # -- front view -------------------------------------------------------------------
    cx, cy = 330.0, 300.0
    s = 360.0 / outer
    ro, rb, rc = outer / 2 * s, bore / 2 * s, bcd / 2 * s
    _text(draw, (cx, 30), "FRONT VIEW", 20, anchor="ma")
    draw.ellipse((cx - ro, cy - ro, cx + ro, cy + ro), outline=INK, width=3)
    draw.ellipse((cx - rb, cy - rb, cx + rb, cy + rb), outline=INK, width=3)
    _dashed_circle(draw, (cx, cy), rc)
    _dashed_line(draw, (cx - ro - 25, cy), (cx + ro + 25, cy))
    _dashed_line(draw, (cx, cy - ro - 25), (cx, cy + ro + 25))
    _diameter_callout(draw, (cx, cy), ro, 40, f"{dia}{outer:g}", 55)
    _diameter_callout(draw, (cx, cy), rc, 122, f"{dia}{bcd:g} B.C.", ro - rc + 40)
    _diameter_callout(draw, (cx, cy), rb, 236, f"{dia}{bore:g} BORE", ro - rb + 40)
    _text(draw, (cx, cy + ro + 40), "BOLT HOLES EQUALLY SPACED ON B.C.", 15, THIN, "ma")
    _text(draw, (cx, cy + ro + 58), "QTY / SIZE: TO BE DESIGNED", 15, THIN, "ma")
    _text(draw, (cx + 12, cy - ro - 22), "A", 18, anchor="la")
    _text(draw, (cx + 12, cy + ro + 4), "A", 18, anchor="la")

    # -- section A-A ----------------------------------------------------------------
    sx, sy = 830.0, 300.0
    s2 = 360.0 / outer
    half_o, half_b, half_c = outer / 2 * s2, bore / 2 * s2, bcd / 2 * s2
    thick = 46.0  # nominal: the thickness is the designer's choice
    _text(draw, (sx, 30), "SECTION A-A", 20, anchor="ma")
    x0, x1 = sx - thick / 2, sx + thick / 2
    _hatch(draw, (x0, sy - half_o, x1, sy - half_b))
    _hatch(draw, (x0, sy + half_b, x1, sy + half_o))
    # Pipe stub welded into the bore (thin lines) and the rigid mating face.
    pipe_wall = max(4.0, 0.06 * half_b)
    for sign in (-1, 1):
        y_in = sy + sign * (half_b - pipe_wall)
        y_out = sy + sign * half_b
        draw.line([(x0 - 150, y_in), (x0, y_in)], fill=THIN, width=1)
        draw.line([(x0 - 150, y_out), (x0, y_out)], fill=THIN, width=1)
    _text(draw, (x0 - 150, sy - 14), "PIPE / HUB", 14, THIN, "lm")
    draw.line([(x1 + 3, sy - half_o - 20), (x1 + 3, sy + half_o + 20)], fill=INK, width=2)
    for k in range(int((2 * half_o + 40) // 12)):
        y = sy - half_o - 20 + 12 * k
        draw.line([(x1 + 3, y), (x1 + 13, y + 10)], fill=THIN, width=1)
    _text(draw, (x1 + 18, sy + half_o + 26), "RIGID MATING FACE", 14, THIN, "la")
    for sign in (-1, 1):
        _dashed_line(draw, (x0 - 30, sy + sign * half_c), (x1 + 40, sy + sign * half_c))
    _dashed_line(draw, (x0 - 170, sy), (x1 + 60, sy))
    # Load arrows on the bore edge pulling the pipe away from the mating face.
    for sign in (-1, 1):
        y = sy + sign * (half_b - pipe_wall / 2)
        _arrow(draw, (x0 - 70, y), (x0 - 8, y), LOAD, 13, 3)
    if drawing.load_as_pressure:
        load_lines = (f"p = {drawing.pressure_mpa:g} MPa", "ON BORE AREA")
    else:
        load_lines = (f"F = {drawing.load_kn:g} kN", "TOTAL, AXIAL")
    for k, line in enumerate(load_lines):
        _text(draw, (x0 - 12, sy - half_b - 48 + 21 * k), line, 16, LOAD, "ra")
    # Diameter dimensions to the right.
    base_x = x1 + 70
    _vertical_dimension(draw, base_x + 150, sy - half_o, sy + half_o, x1, f"{dia}{outer:g}")
    _vertical_dimension(draw, base_x + 75, sy - half_c, sy + half_c, x1 + 40, f"{dia}{bcd:g}")
    _vertical_dimension(draw, base_x, sy - half_b, sy + half_b, x1, f"{dia}{bore:g}")
    # Thickness: to be designed.
    ty = sy + half_o + 60
    draw.line([(x0, sy + half_o + 4), (x0, ty + 8)], fill=THIN, width=1)
    draw.line([(x1, sy + half_o + 4), (x1, ty + 8)], fill=THIN, width=1)
    _arrow(draw, (x0, ty), (x0 - 30, ty))
    _arrow(draw, (x1, ty), (x1 + 30, ty))
    _text(draw, (sx, ty + 12), "t = ? (TO BE DESIGNED)", 16, anchor="ma")

    # -- notes ------------------------------------------------------------------------
    ny = 600
    draw.line([(8, ny - 12), (WIDTH - 9, ny - 12)], fill=INK, width=2)
    names = [f"{MATERIALS[m].label} ({m})" for m in drawing.permitted]
    if drawing.load_as_pressure:
        load_note = (
            f"3. DESIGN PRESSURE p = {drawing.pressure_mpa:g} MPa ACTING ON THE BORE AREA; "
            f"END LOAD F = p x pi x BORE^2 / 4 PULLS THE BORE EDGE."
        )
    else:
        load_note = f"3. DESIGN LOAD F = {drawing.load_kn:g} kN AXIAL, APPLIED ON THE BORE EDGE."
    notes = [
        "NOTES:",
        "1. ALL DIMENSIONS IN mm. VIEWS TO SCALE; DIMENSIONS GOVERN.",
        "2. MATERIAL (ONE OF): " + "; ".join(names) + ".",
        load_note,
        f"4. MAX AXIAL DISPLACEMENT OF BORE EDGE UNDER DESIGN LOAD: {drawing.limit_mm:g} mm.",
        # v3 drawings carry the cost limit (v2 gave the budget in the prompt's text).
        f"5. UNIT COST LIMIT ${drawing.budget_usd:.2f} PER FLANGE (MATERIAL, MACHINING, "
        "DRILLING AND BOLT SETS).",
        "6. BOLTS METRIC GRADE 8.8 ON B.C.; QUANTITY, SIZE AND THICKNESS t TO BE DESIGNED.",
        "7. BREAK SHARP EDGES 0.5 x 45 DEG. FACE FINISH Ra 3.2.",
    ]
    size = 16
    lines: list[str] = []
    while True:  # shrink the notes until they fit above the frame (many permitted materials)
        lines = [part for note in notes for part in _wrap(note, size, 800)]
        if len(lines) * (size + 7) <= HEIGHT - 20 - ny or size <= 11:
            break
        size -= 1
    for k, line in enumerate(lines):
        _text(draw, (24, ny + (size + 7) * k), line, size)

    # -- title block ------------------------------------------------------------------
    tx0, ty0, tx1, ty1 = 842, ny - 12, WIDTH - 9, HEIGHT - 9
    draw.rectangle((tx0, ty0, tx1, ty1), outline=INK, width=2)
    rows = [
        ("TITLE", "FLAT BOLTED FLANGE"),
        ("DWG NO.", drawing.number),
        ("UNITS", "mm / kN / MPa"),
        ("SCALE", "NTS"),
        ("REV", "A     SHEET 1/1"),
    ]
    row_h = (ty1 - ty0) / len(rows)
    for k, (key, value) in enumerate(rows):
        y = ty0 + k * row_h
        if k:
            draw.line([(tx0, y), (tx1, y)], fill=INK, width=1)
        _text(draw, (tx0 + 8, y + row_h / 2), key, 13, THIN, "lm")
        _text(draw, (tx0 + 95, y + row_h / 2), value, 17, anchor="lm")
    draw.line([(tx0 + 88, ty0), (tx0 + 88, ty1)], fill=INK, width=1)
    return img


@lru_cache(maxsize=64)
def drawing_png(drawing: Drawing) -> bytes:
    """PNG bytes of the drawing, cached (a frozen drawing is its own key): prompts are
    rebuilt often."""
    return png_bytes(render_drawing(drawing))
