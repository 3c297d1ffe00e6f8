"""Plots as inline SVG, drawn on the server: no script, no library, nothing fetched.

Pure functions from numbers to markup. Colours come from the console stylesheet's ``.s0`` …
``.s7`` classes (the console's Content-Security-Policy forbids inline styles); every label is
escaped; a series' values are also in its ``data-values`` attribute and its ``<title>``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils.html import escape

WIDTH, HEIGHT = 560, 200
LEFT, RIGHT, TOP, BOTTOM = 70, 12, 10, 24
PALETTE = 8


@dataclass(frozen=True, slots=True)
class Series:
    label: str
    values: tuple[float | None, ...]


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above ``value`` (1 for nothing above 0)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value * (1 - 1e-12):
            return step * power
    return 10 * power


def _number(value: float) -> str:
    """Up to three significant digits below 1,000, whole numbers with thousands separators above."""
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def line_chart(*, name: str, minutes: Sequence[datetime], series: Sequence[Series], unit: str) -> str:
    """A line per series over ``minutes`` (a gap where a value is ``None``; a lone value is a
    dot), y from 0 to a round ceiling, with four grid lines and a time label every 10 minutes."""
    finite = [v for s in series for v in s.values if v is not None and math.isfinite(v)]
    top = nice_ceiling(max(finite, default=0))
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = inner_w / max(1, len(minutes) - 1)

    def x(index: int) -> float:
        return LEFT + index * step

    def y(value: float) -> float:
        return TOP + inner_h * (1 - min(value, top) / top)

    parts = [f'<svg class="chart" id="{escape(name)}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'aria-label="{escape(name)}" xmlns="http://www.w3.org/2000/svg">']
    for tick in range(5):
        value = top * tick / 4
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value):.1f}" y2="{y(value):.1f}"/>')
        parts.append(f'<text class="axis" x="{LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end">'
                     f'{_number(value)}{escape(unit) if tick == 4 else ""}</text>')
    for index, minute in enumerate(minutes):
        if minute.minute % 10 == 0:
            parts.append(f'<text class="axis" x="{x(index):.1f}" y="{HEIGHT - 6}" text-anchor="middle">'
                         f'{minute:%H:%M}</text>')
    for number, one in enumerate(series):
        values = ",".join("" if v is None else _number(v) for v in one.values)
        parts.append(f'<g class="s{number % PALETTE}" data-series="{escape(one.label)}" data-values="{values}">'
                     f'<title>{escape(one.label)}</title>')
        for run in _runs(one.values):
            if len(run) == 1:
                index, value = run[0]
                parts.append(f'<circle cx="{x(index):.1f}" cy="{y(value):.1f}" r="2.5"/>')
            else:
                points = " ".join(f"{x(index):.1f},{y(value):.1f}" for index, value in run)
                parts.append(f'<polyline points="{points}"/>')
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def _runs(values: Sequence[float | None]) -> list[list[tuple[int, float]]]:
    """Consecutive stretches of present values, with their indexes."""
    runs: list[list[tuple[int, float]]] = []
    current: list[tuple[int, float]] = []
    for index, value in enumerate(values):
        if value is None:
            if current:
                runs.append(current)
            current = []
        else:
            current.append((index, value))
    if current:
        runs.append(current)
    return runs


def bar_chart(*, name: str, bars: Sequence[tuple[str, float]], unit: str) -> str:
    """Horizontal bars, one per ``(label, value)``, scaled to a round ceiling."""
    top = nice_ceiling(max((value for _, value in bars), default=0))
    row, label_w = 26, 120
    height = TOP + row * max(1, len(bars)) + 4
    inner_w = WIDTH - label_w - 70
    parts = [f'<svg class="chart" id="{escape(name)}" viewBox="0 0 {WIDTH} {height}" role="img" '
             f'aria-label="{escape(name)}" xmlns="http://www.w3.org/2000/svg">']
    for number, (label, value) in enumerate(bars):
        y = TOP + row * number
        width = inner_w * min(value, top) / top
        parts.append(f'<g class="s{number % PALETTE}" data-series="{escape(label)}" data-values="{_number(value)}">'
                     f'<title>{escape(label)}: {_number(value)}{escape(unit)}</title>'
                     f'<text class="axis" x="{label_w - 8}" y="{y + 15}" text-anchor="end">{escape(label)}</text>'
                     f'<rect x="{label_w}" y="{y + 3}" width="{width:.1f}" height="16" rx="3"/>'
                     f'<text class="axis" x="{label_w + width + 6:.1f}" y="{y + 15}">{_number(value)}{escape(unit)}'
                     f'</text></g>')
    parts.append("</svg>")
    return "".join(parts)
