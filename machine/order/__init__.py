"""The ordering core: the instance stream of a program (:mod:`.stream`, :mod:`.slots`,
:mod:`.unroll`), dep tables (:mod:`.deptable`), the happens-before rules (:mod:`.hb`), access
events and conflicts (:mod:`.events`, :mod:`.conflicts`, :mod:`.reach`), split maps and spans
(:mod:`.splitmap`, :mod:`.spans`) and the size estimate that guards every unroll (:mod:`.size`).

Builds on :mod:`neuronsim.machine.ir` and :mod:`neuronsim.machine.model`.
"""
