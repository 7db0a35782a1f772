"""The machine model: presets (:mod:`.presets`), byte geometry of accesses (:mod:`.geometry`),
the op table and its rules (:mod:`.optable`, :mod:`.oprules`), op numerics
(:mod:`.semantics`) and costs (:mod:`.cost`).

Builds on :mod:`neuronsim.machine.ir` only.
"""
