"""Your own agent under fault (issue 15): load a user's agent object, derive faults for its
output type, and run it through the ordinary runner as one more adapter.

- :mod:`bench.own.config`: ``[[tool.bench.agents]]`` entries and ``module:attr`` references;
- :mod:`bench.own.derive`: the task derived from the user's output type;
- :mod:`bench.own.binding`: the interface one module per SDK implements, and the model handle
  a factory receives;
- :mod:`bench.own.adapter`: a bound agent as a :class:`bench.sdk.adapter.Adapter`.
"""
