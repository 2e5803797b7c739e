"""A real-browser layout check of a published page: what a reader at 1280 px would stumble on.

``check_page(report.html)`` opens a copy of the page in headless Chromium (Debian's package, the one
``benchlib.charts.export.find_browser`` finds) at a given window width, lets plotly draw every chart,
and measures the rendered page with the browser's own boxes:

- the page must not be wider than the window (no horizontal scrolling at 1280 px);
- in every chart, no two visible text elements overlap (titles, subtitles, captions, legend entries,
  tick labels, axis titles, annotations: ``getBoundingClientRect`` of each SVG ``text``) and no text
  runs past the chart's own edges (it would be cut off in the PNG);
- every chart has a title and a subtitle line under it;
- the findings section (``#findings``) is there, with its sentences (``finding_items``: one per ratio; a verdict said
  once over a list of ratios is not an item).

The copy gets one script that waits for plotly, measures, and writes its answer as JSON into the
page; Chromium's ``--dump-dom`` returns it. Nothing is fetched: the page opens offline.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchlib.charts.errors import ChartError
from benchlib.charts.export import find_browser

__all__ = ["Layout", "check_page"]

WIDTH = 1280
_MARK = "benchlib-layout"

_SCRIPT = """<script>
(function () {
  const inter = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left)) *
                          Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top));
  function visible(el) {
    for (let e = el; e && e.nodeType === 1; e = e.parentNode) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) return false;
    }
    return true;
  }
  function chart(div) {
    const box = div.getBoundingClientRect();
    const texts = [];
    div.querySelectorAll('svg.main-svg text').forEach(t => {
      if (t.closest('.hoverlayer') || !t.textContent.trim() || !visible(t)) return;
      const r = t.getBoundingClientRect();
      if (r.width < 1 || r.height < 1) return;
      texts.push({text: t.textContent.trim().slice(0, 80), r: r,
                  cls: (t.getAttribute('class') || t.parentNode.getAttribute('class') || '')});
    });
    const overlaps = [], outside = [];
    for (let i = 0; i < texts.length; i++) {
      const a = texts[i].r;
      if (a.left < box.left - 1 || a.right > box.right + 1 || a.top < box.top - 1 || a.bottom > box.bottom + 1)
        outside.push(texts[i].text);
      for (let j = i + 1; j < texts.length; j++) {
        const b = texts[j].r, area = inter(a, b);
        // a shared pixel row or column is not an overlap: two lines of text touching is how text is set
        if (area > 4 && Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1.5 &&
            Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1.5)
          overlaps.push([texts[i].text, texts[j].text]);
      }
    }
    const title = div.querySelector('.gtitle');
    return {id: div.id || (div.parentNode && div.parentNode.id) || '', width: box.width, height: box.height,
            right: box.right, title: title ? title.textContent.trim() : '',
            title_lines: title ? title.querySelectorAll('tspan.line').length || 1 : 0,
            texts: texts.length, overlaps: overlaps, outside: outside};
  }
  function measure() {
    const charts = Array.from(document.querySelectorAll('.js-plotly-plot'));
    const findings = document.getElementById('findings');
    let items = [];
    if (findings) {
      let e = findings.nextElementSibling;
      // a finding: an item that holds no other finding (a ratio's "why" clauses are part of it, not findings)
      const finding = li => !li.closest('.why') && !Array.from(li.querySelectorAll('li')).some(x => !x.closest('.why'));
      while (e && e.tagName !== 'H2') { e.querySelectorAll('li').forEach(li => { if (finding(li)) items.push(li.textContent); }); e = e.nextElementSibling; }
    }
    return {viewport: window.innerWidth, page_width: document.documentElement.scrollWidth,
            wide: Array.from(document.body.querySelectorAll('*')).filter(e => e.getBoundingClientRect().right >
                  window.innerWidth + 1 && !e.closest('table, .chart, pre')).slice(0, 5).map(e => e.tagName),
            charts: charts.map(chart), findings: findings ? findings.textContent : null, finding_items: items};
  }
  let tries = 0;
  function wait() {
    const divs = document.querySelectorAll('.plotly-graph-div');
    const drawn = document.querySelectorAll('.js-plotly-plot svg.main-svg').length > 0 || divs.length === 0;
    if ((!drawn || document.querySelectorAll('.js-plotly-plot').length < divs.length) && tries++ < 200) {
      setTimeout(wait, 100); return;
    }
    setTimeout(function () {
      const pre = document.createElement('pre');
      pre.id = '%MARK%';
      pre.textContent = JSON.stringify(measure());
      document.body.appendChild(pre);
    }, 300);
  }
  window.addEventListener('load', wait);
})();
</script>""".replace("%MARK%", _MARK)


@dataclass
class ChartLayout:
    id: str
    title: str
    title_lines: int
    texts: int
    width: float
    overlaps: list[tuple[str, str]] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)


@dataclass
class Layout:
    """What the browser measured, and the problems a reader would see (``problems``: one line each)."""

    page: Path
    viewport: int
    page_width: int
    charts: list[ChartLayout]
    findings: str | None
    finding_items: list[str]
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _problems(lay: Layout) -> list[str]:
    out = []
    if lay.page_width > lay.viewport:
        out.append(f"the page is {lay.page_width} px wide in a {lay.viewport} px window: the reader scrolls sideways")
    for c in lay.charts:
        name = c.id or c.title[:40]
        if not c.title:
            out.append(f"chart {name}: no title")
        elif c.title_lines < 2:
            out.append(f"chart {name}: no subtitle under the title {c.title!r}")
        if c.width > lay.viewport:
            out.append(f"chart {name}: {c.width:.0f} px wide, wider than the {lay.viewport} px window")
        for a, b in c.overlaps:
            out.append(f"chart {name}: text {a!r} overlaps {b!r}")
        for t in c.outside:
            out.append(f"chart {name}: text {t!r} runs past the chart's edge")
    return out


def check_page(page: str | Path, *, width: int = WIDTH, height: int = 1000, timeout_s: float = 120) -> Layout:
    """Render ``page`` in headless Chromium at ``width`` px and measure it (see the module's doc)."""
    page = Path(page).resolve()
    if not page.exists():
        raise ChartError(f"no page at {page}", hint="benchlib publish writes CAMPAIGN/report/<time>/report.html")
    browser = find_browser()
    if browser is None:
        raise ChartError("the layout check needs Chromium and none was found",
                         hint="apt-get install -y chromium, or set BROWSER_PATH")
    text = page.read_text()
    text = text.replace("</body>", _SCRIPT + "</body>") if "</body>" in text else text + _SCRIPT
    # the copy sits beside the page so that its relative links (charts/, notebooks/) resolve the same
    with tempfile.NamedTemporaryFile("w", suffix=".html", prefix=".layout-", dir=page.parent, delete=False) as f:
        f.write(text)
        copy = Path(f.name)
    try:
        with tempfile.TemporaryDirectory(prefix="benchlib-chromium-") as profile:
            cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                   f"--window-size={width},{height}", "--virtual-time-budget=30000", "--dump-dom", copy.as_uri()]
            try:
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise ChartError(f"Chromium did not render {page.name} within {timeout_s:.0f} s") from None
    finally:
        copy.unlink(missing_ok=True)
    m = re.search(rf'<pre id="{_MARK}">(.*?)</pre>', res.stdout, re.S)
    if m is None:
        tail = (res.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise ChartError(f"Chromium rendered {page.name} but the layout script did not answer ({tail[0][:200]})",
                         hint="benchlib doctor checks Chromium")
    data = json.loads(html.unescape(m.group(1)))
    charts = [ChartLayout(id=c["id"], title=c["title"], title_lines=c["title_lines"], texts=c["texts"],
                          width=c["width"], overlaps=[tuple(o) for o in c["overlaps"]], outside=c["outside"])
              for c in data["charts"]]
    lay = Layout(page, data["viewport"], data["page_width"], charts, data["findings"], data["finding_items"])
    lay.problems = _problems(lay)
    return lay
