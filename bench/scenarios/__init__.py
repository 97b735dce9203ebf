"""What the fake model is told to do: scenario files (:mod:`bench.scenarios.files`), the behaviours
of one attempt (:mod:`bench.scenarios.behaviours`) and the tasks with their output types and checks
(:mod:`bench.scenarios.tasks`), whose tool plans script the harness tool (:mod:`bench.tools`).

Imports: core, tools.
"""
