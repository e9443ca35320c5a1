"""Static SVG charts of measurement series, built at site-build time.

Pure string building, no JavaScript: a series whose x values are all numbers becomes a line
chart with one point per row, any other series a bar chart with one bar per row. Every text
and attribute value goes through `markupsafe.escape`, whose entities (`&amp;`, `&lt;`, `&gt;`,
`&#34;`, `&#39;`) are valid in both HTML and XML, so the SVG is well-formed XML on its own.

The size of a chart grows with its rows by a few bytes each: the grid lines are one `<path>`,
the line one `<polyline>`, its points one `<path>` of round dots (zero-length segments with
round caps) and the bars one `<path>`, never an element per row. The tick labels and axis
titles stay `<text>`; the chart's accessible name (`<title>` and `aria-label`) says what is
plotted, and the table above every chart gives each value as written in the record. Tests
read the values back from the coordinates and the labelled ticks. The output depends on the
record only: coordinates are rounded to two decimals and printed without trailing zeros.

Numbers come checked by the schema (`kb.records.schema.MAX_NUMBER`, `MIN_NUMBER`): finite, and 0 or
between 1e-9 and 1e15 in size. Within that, any series draws: values all equal, or closer
together than a tick label could tell apart, get an axis of their own size (see `nice_ticks`).
"""

from __future__ import annotations

import math

from markupsafe import Markup, escape

MIN_POINTS = 4  # a series is charted only when it has more than 3 rows (the table shows the rest)
WIDTH = 640
HEIGHT = 320
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 78, 20, 16, 52
ROTATED_EXTRA = 72  # more room under the plot when bar labels are slanted
LABEL_CHARS = 24  # longer bar labels are cut (with an ellipsis); the table has them in full
ACCENT = "#3f51b5"
LIMIT = "#c62828"
GRID = "#c9c9c9"


def charted(measurement) -> bool:
    """Whether `measurement` gets a chart: a series of more than 3 rows."""
    series = measurement.series
    return series is not None and len(series.rows) >= MIN_POINTS


def is_numeric(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def number(value) -> str:
    """A record's number as text, exactly: ints as written, floats in their shortest form."""
    return str(value) if isinstance(value, int) else repr(float(value))


def _c(value: float) -> str:
    """A coordinate, rounded so the output is the same on every platform, without trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


FLAT = 1e-9  # values closer together than this, relative to their size, are drawn as one level


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten, at least two
    ticks, always increasing. Values all equal, or closer together than FLAT times their size (no
    label could tell such ticks apart, and a float may not even hold them), get the axis from 0
    to twice their size instead (from twice their size to 0 when they are negative)."""
    if hi < lo:
        lo, hi = hi, lo
    size = max(abs(lo), abs(hi))
    if hi - lo <= size * FLAT:
        if size == 0:
            lo, hi = 0.0, 1.0
        else:
            lo, hi = (0.0, 2 * size) if lo > 0 else (-2 * size, 0.0)
    raw = (hi - lo) / max(count, 1)
    exponent = math.floor(math.log10(raw))
    multiple = next((m for m in (1, 2, 5) if m * 10.0 ** exponent >= raw), 10)

    def tick(k: int) -> float:
        # The float nearest to the decimal k * step: 3 steps of 1e-13 are 3e-13, not
        # 2.9999999999999997e-13, however small the step (rounding to fixed digits would zero it).
        return float(f"{k * multiple}e{exponent}")

    step = multiple * 10.0 ** exponent
    first, last = math.floor(lo / step), math.ceil(hi / step)
    while tick(first) > lo:  # lo / step is rounded: make sure the ticks cover lo and hi exactly
        first -= 1
    while tick(last) < hi:
        last += 1
    return [tick(k) for k in range(first, max(last, first + 1) + 1)]


def tick_label(value: float, step: float) -> str:
    digits = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    if digits == 0:
        return f"{int(round(value)):,}"
    return f"{value:,.{digits}f}"


def _text(x, y, content: str, **attrs) -> str:
    extra = "".join(f' {name.rstrip("_").replace("_", "-")}="{escape(value)}"' for name, value in attrs.items())
    return f'<text x="{_c(x)}" y="{_c(y)}"{extra}>{escape(content)}</text>'


def x_label(series) -> str:
    return f"{series.x} ({series.x_unit})" if series.x_unit else series.x


def describe(measurement) -> str:
    """The chart's accessible name: what is plotted against what, and how many rows."""
    series = measurement.series
    kind = "Line chart" if all(is_numeric(r.x) for r in series.rows) else "Bar chart"
    limit = (f", with a line at the {series.limit.label} ({number(series.limit.value)} {measurement.unit})"
             if series.limit is not None else "")
    return (f"{kind} of {measurement.quantity}: {measurement.unit} by {x_label(series)}, "
            f"{len(series.rows)} rows{limit}; the table gives every value.")


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1].rstrip() + "\u2026"


def svg(measurement) -> Markup:
    """The chart of a measurement series as an inline `<svg>` element."""
    series = measurement.series
    rows = list(series.rows)
    numeric = all(is_numeric(r.x) for r in rows)
    labels = [str(r.x) for r in rows]
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    band = plot_w / len(rows)
    rotate = not numeric and max(len(_short(label)) for label in labels) * 6.6 > band - 4
    height = HEIGHT + (ROTATED_EXTRA if rotate else 0)
    bottom = MARGIN_BOTTOM + (ROTATED_EXTRA if rotate else 0)
    plot_h = height - MARGIN_TOP - bottom
    left, top, right, base = MARGIN_LEFT, MARGIN_TOP, WIDTH - MARGIN_RIGHT, height - bottom

    values = [float(r.value) for r in rows]
    limit = float(series.limit.value) if series.limit is not None else None
    levels = values + ([limit] if limit is not None else [])
    y_ticks = nice_ticks(min(0.0, *levels), max(0.0, *levels))
    y_lo, y_hi = y_ticks[0], y_ticks[-1]
    y_step = y_ticks[1] - y_ticks[0]

    def y_at(v: float) -> float:
        return base - (v - y_lo) / (y_hi - y_lo) * plot_h

    name = describe(measurement)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="kb-chart__svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-label="{escape(name)}" '
        f'data-kind="{"line" if numeric else "bar"}" data-points="{len(rows)}" '
        f'style="max-width:100%;height:auto" font-family="sans-serif" font-size="12" fill="currentColor">',
        f"<title>{escape(name)}</title>",
        '<path class="kb-chart__grid" d="' + "".join(f"M{_c(left)} {_c(y_at(t))}H{_c(right)}" for t in y_ticks)
        + f'" stroke="{GRID}"/>',
        '<g class="kb-chart__y-axis" text-anchor="end">',
    ]
    out += [_text(left - 6, y_at(tick) + 4, tick_label(tick, y_step)) for tick in y_ticks]
    out.append("</g>")
    out.append(f'<path class="kb-chart__axes" d="M{_c(left)} {_c(top)}V{_c(base)}H{_c(right)}" fill="none" '
               f'stroke="currentColor"/>')

    if numeric:
        xs = [float(r.x) for r in rows]
        x_ticks = nice_ticks(min(xs), max(xs))
        x_lo, x_hi = x_ticks[0], x_ticks[-1]
        x_step = x_ticks[1] - x_ticks[0]

        def x_at(v: float) -> float:
            return left + (v - x_lo) / (x_hi - x_lo) * plot_w

        out.append('<path class="kb-chart__x-ticks" d="' + "".join(f"M{_c(x_at(t))} {_c(base)}v5" for t in x_ticks)
                   + '" stroke="currentColor"/>')
        out.append('<g class="kb-chart__x-axis" text-anchor="middle">')
        out += [_text(x_at(tick), base + 18, tick_label(tick, x_step)) for tick in x_ticks]
        out.append("</g>")
        ordered = sorted(range(len(rows)), key=lambda i: (xs[i], i))
        line = " ".join(f"{_c(x_at(xs[i]))},{_c(y_at(values[i]))}" for i in ordered)
        # Dotted and thin: it only leads the eye from one measured dot to the next; nothing was
        # measured between them (the caption says so).
        out.append(f'<polyline class="kb-chart__line" points="{line}" fill="none" stroke="{ACCENT}" '
                   f'stroke-width="1.5" stroke-dasharray="2 4" opacity="0.7"/>')
        # One dot per row, in record order: a zero-length segment drawn with a round cap.
        dots = "".join(f"M{_c(x_at(x))} {_c(y_at(v))}h0" for x, v in zip(xs, values))
        out.append(f'<path class="kb-chart__points" d="{dots}" fill="none" stroke="{ACCENT}" stroke-width="8" '
                   f'stroke-linecap="round"/>')
    else:
        zero = y_at(0.0)
        every = max(1, math.ceil(len(rows) * 15 / plot_w)) if rotate else 1
        width = band * 0.7
        # One closed rectangle per row, in record order, from the zero line to the value.
        bars = "".join(f"M{_c(left + band * (i + 0.5) - width / 2)} {_c(zero)}V{_c(y_at(v))}h{_c(width)}"
                       f"V{_c(zero)}Z" for i, v in enumerate(values))
        out.append(f'<path class="kb-chart__bars" d="{bars}" fill="{ACCENT}"/>')
        out.append(f'<g class="kb-chart__x-axis" text-anchor="{"end" if rotate else "middle"}">')
        for i, label in enumerate(labels):
            if i % every:
                continue
            centre = left + band * (i + 0.5)
            if rotate:
                out.append(_text(centre, base + 14, _short(label),
                                 transform=f"rotate(-35 {_c(centre)} {_c(base + 14)})"))
            else:
                out.append(_text(centre, base + 18, label))
        out.append("</g>")

    if limit is not None:
        at = y_at(limit)
        out.append(f'<path class="kb-chart__limit" d="M{_c(left)} {_c(at)}H{_c(right)}" stroke="{LIMIT}" '
                   f'stroke-width="2" stroke-dasharray="8 4"/>')
        level = f"{int(limit):,}" if limit == int(limit) else number(series.limit.value)
        out.append(_text(right - 4, at - 6, f"{series.limit.label}: {level}", text_anchor="end",
                         fill=LIMIT, class_="kb-chart__limit-label"))
    out.append(_text(left + plot_w / 2, height - 10, x_label(series), text_anchor="middle",
                     class_="kb-chart__x-label", font_weight="bold"))
    out.append(_text(16, top + plot_h / 2, measurement.unit, text_anchor="middle", class_="kb-chart__y-label",
                     font_weight="bold", transform=f"rotate(-90 16 {_c(top + plot_h / 2)})"))
    out.append("</svg>")
    return Markup("\n".join(out))
