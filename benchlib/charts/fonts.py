"""Fonts embedded in exported SVGs, so a chart opened anywhere (a blog's CMS, Inkscape, a browser without the
font) looks as it does in the PNG.

The charts are set in Liberation Sans (``theme.FONT_FAMILY``, installed with Chromium by fonts-liberation).
``embed(svg_text)`` subsets the regular and, where the chart uses it, the bold face to the characters the
SVG prints (fontTools; a few KB instead of 400) and adds them as ``@font-face`` rules with WOFF data URLs
in the SVG's own ``<style>``.
"""

from __future__ import annotations

import base64
import html
import io
import logging
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from benchlib.charts.errors import ChartError
from benchlib.charts.theme import FONT_FAMILY

__all__ = ["embed", "font_file"]

logging.getLogger("fontTools.subset").setLevel(logging.ERROR)  # "FFTM NOT subset; dropped": harmless

_KNOWN = {"normal": "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
          "bold": "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf"}


@lru_cache(maxsize=None)
def font_file(weight: str = "normal") -> Path:
    """The font file of ``FONT_FAMILY`` in ``weight`` (normal | bold): fontconfig's answer, else Debian's path."""
    if shutil.which("fc-match"):
        style = ":bold" if weight == "bold" else ""
        out = subprocess.run(["fc-match", "-f", "%{file}", f"{FONT_FAMILY}{style}"], capture_output=True, text=True)
        path = Path(out.stdout.strip())
        if out.returncode == 0 and FONT_FAMILY.replace(" ", "") in path.name and path.exists():
            return path
    path = Path(_KNOWN[weight])
    if not path.exists():
        raise ChartError(f"the chart font {FONT_FAMILY} ({weight}) is not installed",
                         hint="apt-get install -y fonts-liberation (./scripts/bootstrap does it as root)")
    return path


def _subset_woff(path: Path, text: str) -> str:
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(str(path))
    options = subset.Options()
    options.flavor = "woff"  # zlib-compressed: no brotli needed
    options.layout_features = ["kern", "liga"]
    options.name_IDs = ["*"]
    sub = subset.Subsetter(options)
    sub.populate(text=text + " 0123456789.,-−×%")
    sub.subset(font)
    buf = io.BytesIO()
    font.flavor = "woff"
    font.save(buf)
    return base64.b64encode(buf.getvalue()).decode()


def _printed(svg: str) -> str:
    """Every character the SVG's text elements print (entities decoded)."""
    return "".join(sorted(set(html.unescape("".join(re.findall(r">([^<>]+)<", svg))))))


def embed(svg: str) -> str:
    """``svg`` with its font(s) embedded (an SVG without text, or already embedded, is returned as is)."""
    if "@font-face" in svg or "<text" not in svg:
        return svg
    chars = _printed(svg)
    weights = ["normal"] + (["bold"] if re.search(r"font-weight:\s*(bold|[6-9]00)", svg) else [])
    rules = "".join(
        f'@font-face{{font-family:"{FONT_FAMILY}";font-weight:{w};font-style:normal;'
        f'src:url(data:font/woff;base64,{_subset_woff(font_file(w), chars)}) format("woff")}}'
        for w in weights)
    style = f"<style>{rules}</style>"
    m = re.search(r"<svg\b[^>]*>", svg)
    if m is None:
        raise ChartError("the exported SVG has no <svg> element")
    return svg[:m.end()] + style + svg[m.end():]
