"""Pillow rendering of the poker table.

The image is the only place the cards, the board, the pot, the stacks, the bets, the
button and the actions appear: a green felt with the bot's seat at the top and the
agent's at the bottom, the board and pot in the middle, a header with the hand number,
street and blinds, and a panel listing this hand's actions. Cards use a four-colour deck
(spades black, hearts red, diamonds blue, clubs green) with drawn suit symbols, so they
read at a glance; a finished hand gets a result banner and shows the bot's cards when it
went to showdown.
"""

from __future__ import annotations

import io
from functools import lru_cache
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from agentharness.tasks.holdem.simulator import TableView

Box = tuple[float, float, float, float]
Color = tuple[int, int, int]

BACKGROUND: Color = (24, 34, 30)
FELT: Color = (22, 110, 60)
FELT_EDGE: Color = (92, 58, 30)
TEXT: Color = (240, 240, 235)
MUTED: Color = (180, 200, 185)
PANEL: Color = (36, 46, 42)
CARD: Color = (252, 252, 248)
CARD_BACK: Color = (40, 70, 150)
HIGHLIGHT: Color = (250, 210, 60)
CHIP: Color = (200, 40, 40)
SUIT_COLORS: dict[str, Color] = {
    "s": (20, 20, 20),
    "h": (200, 20, 30),
    "d": (20, 80, 200),
    "c": (20, 130, 50),
}
SUIT_NAMES = {"s": "spades", "h": "hearts", "d": "diamonds", "c": "clubs"}
HEIGHT_RATIO = 0.62


@lru_cache(maxsize=16)
def _font(size: int) -> Any:
    try:
        return ImageFont.load_default(size=size)
    except Exception:  # Pillow without FreeType: fixed-size bitmap font
        return ImageFont.load_default()


def _suit(draw: ImageDraw.ImageDraw, suit: str, cx: float, cy: float, r: float) -> None:
    """A drawn suit symbol of half-size ``r`` centred at (cx, cy)."""
    color = SUIT_COLORS[suit]
    if suit == "d":
        draw.polygon(
            [(cx, cy - r), (cx + 0.75 * r, cy), (cx, cy + r), (cx - 0.75 * r, cy)], fill=color
        )
    elif suit == "h":
        k = 0.52 * r
        draw.ellipse((cx - 2 * k, cy - r, cx, cy - r + 2 * k), fill=color)
        draw.ellipse((cx, cy - r, cx + 2 * k, cy - r + 2 * k), fill=color)
        draw.polygon(
            [
                (cx - 2 * k + 0.5, cy - r + 1.3 * k),
                (cx + 2 * k - 0.5, cy - r + 1.3 * k),
                (cx, cy + r),
            ],
            fill=color,
        )
    elif suit == "s":
        k = 0.5 * r
        draw.polygon(
            [(cx, cy - r), (cx + 2 * k, cy + 0.2 * r), (cx - 2 * k, cy + 0.2 * r)], fill=color
        )
        draw.ellipse((cx - 2 * k, cy - 0.25 * r, cx, cy - 0.25 * r + 2 * k), fill=color)
        draw.ellipse((cx, cy - 0.25 * r, cx + 2 * k, cy - 0.25 * r + 2 * k), fill=color)
        draw.polygon(
            [(cx, cy + 0.3 * r), (cx + 0.45 * r, cy + r), (cx - 0.45 * r, cy + r)], fill=color
        )
    else:  # clubs
        k = 0.42 * r
        draw.ellipse((cx - k, cy - r, cx + k, cy - r + 2 * k), fill=color)
        draw.ellipse((cx - 2.1 * k, cy - 0.55 * k, cx - 0.1 * k, cy + 1.45 * k), fill=color)
        draw.ellipse((cx + 0.1 * k, cy - 0.55 * k, cx + 2.1 * k, cy + 1.45 * k), fill=color)
        draw.polygon([(cx, cy), (cx + 0.45 * r, cy + r), (cx - 0.45 * r, cy + r)], fill=color)


def _card(
    draw: ImageDraw.ImageDraw, x: float, y: float, w: float, h: float, card: str | None
) -> None:
    """A card with its top-left corner at (x, y); ``None`` draws the back."""
    radius = max(4, int(w // 9))
    if card is None:
        draw.rounded_rectangle((x, y, x + w, y + h), radius, fill=CARD_BACK, outline=CARD, width=2)
        inset = w * 0.16
        draw.rounded_rectangle(
            (x + inset, y + inset, x + w - inset, y + h - inset),
            radius // 2,
            outline=(120, 150, 220),
            width=2,
        )
        return
    rank, suit = card[0], card[1]
    draw.rounded_rectangle((x, y, x + w, y + h), radius, fill=CARD, outline=(90, 90, 90), width=1)
    color = SUIT_COLORS[suit]
    label = "10" if rank == "T" else rank
    _text(draw, (x + w * 0.1, y + h * 0.05), label, int(h * 0.36), color)
    _suit(draw, suit, x + w * 0.58, y + h * 0.66, h * 0.2)


def _text(
    draw: ImageDraw.ImageDraw,
    xy: tuple[float, float],
    text: str,
    size: int,
    fill: Color = TEXT,
    anchor: str = "la",
) -> None:
    mask, dx, dy = _text_mask(text, size, anchor)
    draw.bitmap((round(xy[0]) + dx, round(xy[1]) + dy), mask, fill=fill)


@lru_cache(maxsize=4096)
def _text_mask(text: str, size: int, anchor: str) -> tuple[Image.Image, int, int]:
    """``text`` rendered once as an antialiased mask, and its offset from the anchor point.

    Tables repeat most of their texts (names, stacks, card ranks, this hand's actions);
    drawing a cached mask is what ``draw.text`` does after rendering the glyphs.
    """
    font = _font(size)
    x0, y0, x1, y1 = font.getbbox(text, anchor=anchor)
    mask = Image.new("L", (max(int(x1 - x0), 1), max(int(y1 - y0), 1)), 0)
    ImageDraw.Draw(mask).text((-x0, -y0), text, fill=255, font=font, anchor=anchor)
    return mask, int(x0), int(y0)


def _chips(draw: ImageDraw.ImageDraw, cx: float, cy: float, amount: int, size: int) -> None:
    if amount <= 0:
        return
    r = size * 0.55
    draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=CHIP, outline=TEXT, width=2)
    _text(draw, (cx + r + 6, cy), f"Bet {amount}", size, HIGHLIGHT, "lm")


def _seat(
    draw: ImageDraw.ImageDraw,
    cx: float,
    top: float,
    name: str,
    stack: int,
    cards: tuple[str, ...] | None,
    button: bool,
    highlight: bool,
    s: float,
) -> None:
    """Two cards and a name plate (name and stack) under them, centred at cx."""
    cw, ch = 58 * s, 82 * s
    gap = 8 * s
    x0 = cx - cw - gap / 2
    for k in range(2):
        _card(draw, x0 + k * (cw + gap), top, cw, ch, None if cards is None else cards[k])
    plate_w, plate_h = 190 * s, 40 * s
    py = top + ch + 6 * s
    box = (cx - plate_w / 2, py, cx + plate_w / 2, py + plate_h)
    draw.rounded_rectangle(
        box,
        8,
        fill=(18, 24, 22),
        outline=HIGHLIGHT if highlight else MUTED,
        width=3 if highlight else 1,
    )
    _text(draw, (cx, py + plate_h * 0.3), name, int(15 * s), HIGHLIGHT if highlight else TEXT, "mm")
    _text(draw, (cx, py + plate_h * 0.74), f"Stack {stack}", int(14 * s), TEXT, "mm")
    if button:
        r = 13 * s
        bx, by = box[2] + r + 6, py + plate_h / 2
        draw.ellipse(
            (bx - r, by - r, bx + r, by + r), fill=(250, 250, 250), outline=(60, 60, 60), width=2
        )
        _text(draw, (bx, by), "D", int(16 * s), (20, 20, 20), "mm")


def table_image(view: TableView, width: int = 720) -> Image.Image:
    """The table for ``view`` as a Pillow image (``width`` x 0.62 * ``width``)."""
    s = width / 900
    height = int(width * HEIGHT_RATIO)
    img = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(img)
    panel_w = 250 * s
    felt_right = width - panel_w - 14 * s
    header_h = 40 * s

    # header
    hand = f"Hand {view.hand} of {view.n_hands}"
    _text(
        draw,
        (14 * s, header_h / 2),
        f"{hand}  |  {view.street}  |  Blinds {view.small_blind}/{view.big_blind}",
        int(17 * s),
        TEXT,
        "lm",
    )
    _text(
        draw,
        (felt_right, header_h / 2),
        f"Session net {view.session_net:+d}",
        int(16 * s),
        MUTED,
        "rm",
    )

    # felt
    felt: Box = (14 * s, header_h + 4 * s, felt_right, height - 40 * s)
    draw.rounded_rectangle(felt, int(120 * s), fill=FELT, outline=FELT_EDGE, width=int(10 * s))
    cx = (felt[0] + felt[2]) / 2
    top_seat = felt[1] + 16 * s
    _seat(
        draw,
        cx,
        top_seat,
        f"BOT ({view.style})",
        view.bot_stack,
        view.bot_hole,
        not view.agent_button,
        False,
        s,
    )
    bottom_seat = felt[3] - (82 + 6 + 40 + 14) * s
    _seat(
        draw,
        cx,
        bottom_seat,
        "YOU",
        view.agent_stack,
        view.agent_hole,
        view.agent_button,
        view.agent_to_act,
        s,
    )

    # bets
    _chips(draw, cx - 60 * s, top_seat + (82 + 46 + 22) * s, view.bot_bet, int(15 * s))
    _chips(draw, cx - 60 * s, bottom_seat - 18 * s, view.agent_bet, int(15 * s))

    # board and pot
    bw, bh, gap = 54 * s, 76 * s, 8 * s
    total = 5 * bw + 4 * gap
    bx = cx - total / 2
    by = (felt[1] + felt[3]) / 2 - bh / 2 + 4 * s
    for k in range(5):
        x = bx + k * (bw + gap)
        if k < len(view.board):
            _card(draw, x, by, bw, bh, view.board[k])
        else:
            draw.rounded_rectangle((x, by, x + bw, by + bh), 6, outline=(60, 150, 95), width=2)
    _text(draw, (bx + total + 14 * s, by + bh / 2), f"Pot {view.pot}", int(17 * s), TEXT, "lm")

    # last action / footer
    _text(
        draw, (14 * s, height - 20 * s), f"Last action: {view.last_action}", int(15 * s), TEXT, "lm"
    )

    # history panel
    px0 = width - panel_w
    draw.rectangle((px0, 0, width, height), fill=PANEL)
    _text(draw, (px0 + 12 * s, 16 * s), "This hand", int(16 * s), HIGHLIGHT)
    y = 44 * s
    line_h = 19 * s
    lines = list(view.history)
    max_lines = int((height - 60 * s) // line_h)
    if len(lines) > max_lines:
        lines = ["...", *lines[-(max_lines - 1) :]]
    for line in lines:
        _text(
            draw,
            (px0 + 12 * s, y),
            _fit(draw, line, panel_w - 20 * s, int(13 * s)),
            int(13 * s),
            TEXT,
        )
        y += line_h

    if view.banner or view.footer:
        _banner(draw, img.size, felt, view, s)
    return img


def _fit(draw: ImageDraw.ImageDraw, text: str, width: float, size: int) -> str:
    font = _font(size)
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "...", font=font) > width:
        text = text[:-1]
    return text + "..."


def _banner(
    draw: ImageDraw.ImageDraw, size: tuple[int, int], felt: Box, view: TableView, s: float
) -> None:
    """The hand's result above the board, the session's below it."""
    cx = (felt[0] + felt[2]) / 2
    mid = (felt[1] + felt[3]) / 2
    font_size = int(16 * s)
    for text, cy in ((view.banner, mid - 62 * s), (view.footer, mid + 62 * s)):
        if not text:
            continue
        width = draw.textlength(text, font=_font(font_size)) + 30 * s
        width = min(width, felt[2] - felt[0] - 10 * s)
        h = 34 * s
        draw.rounded_rectangle(
            (cx - width / 2, cy - h / 2, cx + width / 2, cy + h / 2),
            10,
            fill=(250, 245, 220),
            outline=HIGHLIGHT,
            width=3,
        )
        fitted = _fit(draw, text, width - 16 * s, font_size)
        _text(draw, (cx, cy), fitted, font_size, (30, 30, 30), "mm")


_SAMPLE_VIEW = TableView(
    hand=12,
    n_hands=30,
    street="Hand over",
    small_blind=50,
    big_blind=100,
    style="aggressive",
    agent_hole=("Ah", "Td"),
    bot_hole=None,  # face down: the card back
    board=("2h", "7d", "Jc", "Qs"),
    agent_stack=9850,
    bot_stack=10150,
    agent_bet=300,
    bot_bet=600,
    pot=1200,
    agent_button=True,
    agent_to_act=True,
    last_action="BOT raises to 600",
    history=("YOU (button) post 50", "BOT posts 100", "YOU raise to 300", "BOT calls"),
    session_net=-150,
    banner="BOT wins 1200 with a pair of kings",
    footer="Session over",
)


@lru_cache(maxsize=8)
def _palette(width: int) -> Image.Image:
    """A fixed 64-colour palette for tables of this width, taken from a sample table with
    every colour the renderer uses (cards of all suits and a card back, highlights, chips, a banner).
    Mapping onto a known palette is ~6x faster than finding one per image."""
    return table_image(_SAMPLE_VIEW, width).quantize(64, method=Image.Quantize.FASTOCTREE)


@lru_cache(maxsize=256)
def table_png(view: TableView, width: int = 720) -> bytes:
    """The table image as PNG bytes (64-colour palette: a third of the size, faster).

    Cached: the prompt, the world and replays render the same tables again.
    """
    image = table_image(view, width).quantize(palette=_palette(width), dither=Image.Dither.NONE)
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)  # fast; a palette image stays small
    return buf.getvalue()


def card_name(card: str) -> str:
    """'Ah' -> 'ace of hearts' (for alt texts in tests and docs, never sent to the agent)."""
    names = {"T": "10", "J": "jack", "Q": "queen", "K": "king", "A": "ace"}
    return f"{names.get(card[0], card[0])} of {SUIT_NAMES[card[1]]}"
