"""Chart builders shaped like plotly express: a tidy frame plus column roles in, a Figure out.

No builder writes files or calls show(); every figure uses the registered ``benchlib`` template
(readable at blog width, colour-blind-safe palette) and the same colour for a topology in every
chart. A missing column raises ``ChartError`` naming the columns that are there.
"""

from benchlib.charts import axes
from benchlib.charts.builders import (
    catch_up,
    flow_control_sweep,
    lag_over_time,
    latency_vs_rtt,
    latency_vs_threads,
    parallel_apply,
    ratio_bars,
    stability_over_time,
    sustained_vs_peak,
    throughput_vs_threads,
)
from benchlib.charts.cost import cost_bars
from benchlib.charts.consistency import consistency_plane, read_latency, stale_fractions, staleness_ecdf
from benchlib.charts.errors import ChartError
from benchlib.charts.export import use_renderer
from benchlib.charts.theme import topology_color

__all__ = ["ChartError", "axes", "catch_up", "consistency_plane", "cost_bars", "flow_control_sweep", "lag_over_time", "latency_vs_rtt", "latency_vs_threads",
           "parallel_apply", "ratio_bars", "read_latency", "stale_fractions", "staleness_ecdf", "stability_over_time", "sustained_vs_peak", "throughput_vs_threads", "topology_color",
           "use_renderer"]
