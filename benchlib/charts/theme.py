"""The house template and the colours of topologies (Okabe-Ito: safe for colour-blind readers; each topology's and
system's own is in its facts, ``benchlib.catalogue``): data only."""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

from benchlib.catalogue import house_color


OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]

WIDTH, HEIGHT = 1200, 675  # a blog's 16:9 slot; PNG exported at 2x (2400x1350)
#: the one typeface of charts and report: metric-compatible with Arial, installed with Chromium (fonts-liberation),
#: embedded in every SVG (benchlib.charts.fonts) so a chart looks the same wherever it is opened
FONT_FAMILY = "Liberation Sans"
FONT = f"{FONT_FAMILY}, Arial, Helvetica, sans-serif"


def topology_color(name: str, i: int = 0) -> str:
    """A topology's (or system's) colour in every chart, as its facts declare it (``benchlib.catalogue``); else the
    ``i``-th Okabe-Ito colour."""
    return house_color(name) or OKABE_ITO[i % len(OKABE_ITO)]


def lighter(hex_color: str, amount: float = 0.55) -> str:
    """The same hue mixed with white (relaxed durability next to durable)."""
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    mix = [round(c + (255 - c) * amount) for c in (r, g, b)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def _template() -> go.layout.Template:
    t = go.layout.Template()
    t.layout = go.Layout(
        font=dict(family=FONT, size=15, color="#222"),
        title=dict(font=dict(size=19), x=0.015, xanchor="left"),
        colorway=OKABE_ITO,
        paper_bgcolor="white",
        plot_bgcolor="white",
        width=WIDTH,
        height=HEIGHT,
        margin=dict(l=70, r=30, t=70, b=60),
        xaxis=dict(showgrid=True, gridcolor="#e6e6e6", zeroline=False, linecolor="#444", ticks="outside"),
        yaxis=dict(showgrid=True, gridcolor="#e6e6e6", zeroline=False, linecolor="#444", ticks="outside"),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0, title_text=""),
        hovermode="x unified",
    )
    return t


pio.templates["benchlib"] = _template()
TEMPLATE = "benchlib"
