"""A campaign's problems as a reader sees them, in the report and in every notebook alike.

Problems with the same fix are one group: its count, one example and every place folded under it; errors first,
then warnings by how many they are. Notes (information: what holds and is in line, such as a small rate of
retried transactions) come last, folded. ``Problems`` displays as that HTML in Jupyter and as text elsewhere.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import pandas as pd

__all__ = ["Problems", "grouped", "problems_html"]

ORDER = {"error": 0, "warning": 1, "info": 2}
#: the colour of a group's summary line by severity (the report's and the notebooks' alike)
SHADE = {"error": "#fde0dc", "warning": "#fff4d6", "info": "#eef2f7"}
NAMES = {"error": ("error", "errors"), "warning": ("warning", "warnings"), "info": ("note", "notes")}


@dataclass
class Group:
    severity: str
    fix: str
    rows: pd.DataFrame  # where, what

    def count(self) -> str:
        n = len(self.rows)
        return f"{n} {NAMES.get(self.severity, (self.severity, self.severity))[n > 1]}"

    def text(self) -> str:
        """One example, how many more, and the fix."""
        n = len(self.rows)
        more = f" (and {n - 1} more like it)" if n > 1 else ""
        return f"{self.rows.iloc[0].what}{more}" + (f" — fix: {self.fix}" if self.fix else "")

    def summary(self) -> str:
        return f"{self.count()}: {self.text()}"


def grouped(problems: pd.DataFrame) -> list[Group]:
    """Problems grouped by severity and fix, errors first, then the largest groups."""
    if problems.empty:
        return []
    p = problems.fillna({"fix": ""})
    groups = [Group(sev, fix, g[["where", "what"]]) for (sev, fix), g in p.groupby(["severity", "fix"], sort=False)]
    return sorted(groups, key=lambda g: (ORDER.get(g.severity, 3), -len(g.rows)))


def problems_html(problems: pd.DataFrame, *, notes: bool = True) -> str:
    """Each group a fold: its summary line (count, one example, the fix), every place in a table under it."""
    groups = [g for g in grouped(problems) if notes or g.severity != "info"]
    out = [] if any(g.severity != "info" for g in groups) else ["<p>No errors or warnings.</p>"]
    for g in groups:
        rows = "".join(f"<tr><td>{html.escape(str(r.where))}</td><td>{html.escape(str(r.what))}</td></tr>"
                       for r in g.rows.itertuples(index=False))
        out.append(f'<details class="{html.escape(g.severity)}"><summary style="cursor:pointer;padding:4px;'
                   f'background:{SHADE.get(g.severity, "#fff")}"><b>{html.escape(g.count())}</b>: '
                   f"{html.escape(g.text())}</summary>"
                   f'<table class="t"><tr><th>where</th><th>what</th></tr>{rows}</table></details>')
    return "".join(out)


class Problems:
    """The problems of a campaign for a notebook: grouped as in the report (``frame`` has every row)."""

    def __init__(self, problems: pd.DataFrame):
        self.frame = problems.reset_index(drop=True)

    def _repr_html_(self) -> str:
        return problems_html(self.frame)

    def __repr__(self) -> str:
        groups = grouped(self.frame)
        lines = [] if any(g.severity != "info" for g in groups) else ["No errors or warnings."]
        return "\n".join(lines + [g.summary() for g in groups])
