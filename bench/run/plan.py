"""The cell plans a run drives, as :mod:`bench.planner` made them (:class:`CellPlan`, the filters
and the shard rule): the planner's face for the modules of ``bench.run`` and their callers."""

from bench.planner.cells import CellPlan, Filters, expand, in_shard, parse_shard, shard_of

__all__ = ["CellPlan", "Filters", "expand", "in_shard", "parse_shard", "shard_of"]
