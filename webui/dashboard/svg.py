"""Line charts as inline SVG, drawn on the server (no script, no CDN)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from html import escape

from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 400, 150
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 10, 24


def _fmt(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    if value >= 100 or value == int(value):
        return f"{value:.0f}"
    return f"{value:.2f}"


def line_chart(
    points: Sequence[tuple[float, float | None]], label: str, unit: str = "",
    color: str = "#1a73e8",
) -> SafeString:
    """An SVG line chart of ``(epoch seconds, value)``; ``None`` values break the line."""
    values = [v for _, v in points if v is not None]
    title = escape(label)
    if not points or not values:
        return mark_safe(
            f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{title}: no data">'
            f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" fill="#5f6368" '
            'font-size="13">no data yet</text></svg>'
        )
    t0, t1 = points[0][0], points[-1][0]
    vmax = max(values) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: float) -> float:
        return LEFT + (t - t0) / ((t1 - t0) or 1) * plot_w

    def y(v: float) -> float:
        return TOP + plot_h - v / vmax * plot_h

    runs: list[list[str]] = [[]]
    for t, v in points:
        if v is None:
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(f"{x(t):.1f},{y(v):.1f}")
    lines = "".join(
        f'<polyline points="{" ".join(run)}" fill="none" stroke="{color}" stroke-width="2" '
        'stroke-linejoin="round"/>'
        if len(run) > 1
        else f'<circle cx="{run[0].split(",")[0]}" cy="{run[0].split(",")[1]}" r="2.5" '
        f'fill="{color}"/>'
        for run in runs
        if run
    )
    grid = "".join(
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(vmax * f):.1f}" y2="{y(vmax * f):.1f}" '
        'stroke="#e5e5e5"/>'
        f'<text x="{LEFT - 6}" y="{y(vmax * f) + 4:.1f}" text-anchor="end" font-size="12" '
        f'fill="#5f6368">{_fmt(vmax * f)}</text>'
        for f in (0, 0.5, 1)
    )
    span_min = (t1 - t0) / 60
    axis = (
        f'<text x="{LEFT}" y="{HEIGHT - 6}" font-size="12" fill="#5f6368">'
        f'{escape(time.strftime("%H:%M", time.gmtime(t0)))} UTC (−{span_min:.0f} min)</text>'
        f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end" font-size="12" '
        f'fill="#5f6368">{escape(time.strftime("%H:%M", time.gmtime(t1)))}</text>'
    )
    last = next(v for _, v in reversed(points) if v is not None)
    aria = f"{title}: latest {_fmt(last)}{escape(unit)}, peak {_fmt(vmax)}{escape(unit)}"
    return mark_safe(
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{aria}">'
        f"<title>{aria}</title>{grid}{lines}{axis}</svg>"
    )
