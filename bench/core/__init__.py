"""The words and small tools every package shares: the vocabulary of modes, outcomes and behaviours
(:mod:`bench.core.vocabulary`), how an exception is named (:mod:`bench.core.names`), "did you mean"
(:mod:`bench.core.suggest`), token counts (:mod:`bench.core.tokens`), scoped environment
variables (:mod:`bench.core.environ`) and whether the user interrupted a run
(:mod:`bench.core.interrupts`).

Imports: nothing of bench. Everything else may import it.
"""
