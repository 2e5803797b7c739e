"""The read split, an axis: ``load.read_threads`` sysbench threads read (oltp_read_only) on every node besides the write
node while the writers write, each session under the run's read consistency (``benchlib.axes.read_split.run``); the
readers' throughput is compared like the writers' (metric ``read_tps``)."""

__all__ = ["axis"]  # the axis itself: benchlib.axes.read_split.axis
