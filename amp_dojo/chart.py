"""The loss chart of a grading as a static SVG: the learner's loss and the FP32
baseline's over the graded steps. Drawn here, inline, so a notebook needs no
network and no JavaScript library to show it; text takes the notebook's colour
(currentColor), so it reads on light and dark themes."""

from __future__ import annotations

import math
from html import escape

from grader.wording.locales import number
from grader.wording.phrases import phrase

WIDTH, HEIGHT = 480, 230
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 40, 34
COLOURS = {"submission": "#4f46e5", "baseline": "#94a3b8"}  # as the web app draws them


def _ticks(low: float, high: float, count: int = 4) -> list[float]:
    """Round values spanning [low, high] (1, 2 or 5 times a power of ten apart)."""
    if high <= low:
        return [low]
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _fmt(value: float, lang: str) -> str:
    """An axis label, with `lang`'s decimal symbol ("2,25" in Italian)."""
    return number(value, lang, ".3g")


def loss_svg(submission: list[float], baseline: list[float], lang: str = "en") -> str:
    values = [v for v in (*submission, *baseline) if math.isfinite(v)]
    steps = max(len(submission), len(baseline))
    if not values or steps < 2:
        return ""
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or abs(high) * 0.05 or 1.0
    low, high = low - pad, high + pad
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    x = lambda i: LEFT + plot_w * i / (steps - 1)  # noqa: E731
    y = lambda v: TOP + plot_h * (high - v) / (high - low)  # noqa: E731
    title = escape(phrase("chart.title", lang))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} '
        f'{HEIGHT}" role="img" aria-label="{title}" font-family="sans-serif" font-size="11" '
        f'fill="currentColor"><title>{title}</title>',
        f'<text x="{LEFT}" y="14" font-size="12" font-weight="bold">{title}</text>',
    ]
    for tick in _ticks(low, high):
        ty = y(tick)
        out.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="currentColor" '
            f'stroke-opacity="0.15"/><text x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end">'
            f"{_fmt(tick, lang)}</text>"
        )
    every = max(1, math.ceil(steps / 10))
    for i in range(0, steps, every):
        out.append(f'<text x="{x(i):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{i}</text>')
    out.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 4}" text-anchor="middle">'
        f"{escape(phrase('chart.step', lang))}</text>"
    )
    out.append(
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="currentColor" '
        'stroke-opacity="0.4"/>'
    )
    # the baseline dashed over the learner's line: where they agree, both stay visible
    for name, series, dash in (("submission", submission, ""), ("baseline", baseline, ' stroke-dasharray="5 3"')):
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(series) if math.isfinite(v))
        if points:
            out.append(
                f'<polyline class="loss-{name}" points="{points}" fill="none" stroke="{COLOURS[name]}" '
                f'stroke-width="2"{dash}/>'
            )
    for k, (name, key, dash) in enumerate(
        (("submission", "chart.yours", ""), ("baseline", "chart.baseline", ' stroke-dasharray="5 3"'))
    ):
        lx = LEFT + k * 150
        out.append(
            f'<line x1="{lx}" x2="{lx + 18}" y1="26" y2="26" stroke="{COLOURS[name]}" stroke-width="2"{dash}/>'
            f'<text x="{lx + 22}" y="30">{escape(phrase(key, lang))}</text>'
        )
    out.append("</svg>")
    return "".join(out)
