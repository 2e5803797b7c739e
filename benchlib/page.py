"""Pieces of the report page that the report and the axes' own sections share: a table, a folded section."""

from __future__ import annotations

import html

import pandas as pd

__all__ = ["fold", "table"]


def table(df: pd.DataFrame, columns: list[str]) -> str:
    cols = [c for c in columns if c in df.columns]
    if df.empty or not cols:
        return "<p>none</p>"
    return df[cols].to_html(index=False, border=0, classes="t", float_format=lambda v: f"{v:.4g}", na_rep="")


def fold(title: str, body: str, *, open_: bool = False) -> str:
    """A collapsible section (a table the reader opens when the findings and charts raise a question)."""
    return f"<details{' open' if open_ else ''}><summary><h2>{html.escape(title)}</h2></summary>{body}</details>"
