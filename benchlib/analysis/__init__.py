"""Statistics on campaign frames (docs/analysis/specification.md): warm-up, stability, estimates,
agreement of repetitions, ratios against a baseline, lag growth, campaign validation.

Analysis code: imports nothing from the lab, the sampler or the runner; it runs on any campaign folder.
"""

__all__ = ["campaign", "changepoint", "compare", "comparisons", "lag", "runs", "series", "stability", "sustained",
           "validate", "views"]
