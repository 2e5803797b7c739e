"""The history axis's section of the report page: the anomalies per configuration in words, how they were found,
the table folded."""

from __future__ import annotations

import html
from typing import Any

from benchlib.axes.history.analysis import CONFIG
from benchlib.axes.history.checker import KINDS, MEANING
from benchlib.page import fold, table

__all__ = ["section"]


def section(a: Any, said: list[str]) -> str:
    if not said:
        return ""
    items = "".join(f"<li>{html.escape(s)}</li>" for s in said)
    how = ("Clients ran short list-append transactions beside the load (reads of a key's whole list, appends of "
           "values unique to their key), and benchlib's checker inferred each key's order of appends from the reads, "
           "the dependencies between transactions, and the cycles they close (Adya's classes, as Elle finds them); "
           "a transaction whose commit never answered counts once a read saw its appends. Rates are per 100,000 "
           "committed transactions, intervals take runs as the unit.")
    s = a.axis("history").summary
    keys = [c for c in s.columns if c in ("cluster", *CONFIG)]
    cols = keys + ["runs", "committed", "failed", "unknown", "refused"]
    for k in KINDS:
        if k in s and (s[k] > 0).any():
            cols += [k, f"{k} per_100k", f"{k} low", f"{k} high"]
    legend = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(MEANING[k])}</li>" for k in KINDS)
    return (f"<h2>Isolation anomalies</h2><ul>{items}</ul><p class=\"how\">{html.escape(how)}</p>"
            + fold("Anomalies by configuration", table(s, cols)) + fold("What each kind means", f"<ul>{legend}</ul>"))
