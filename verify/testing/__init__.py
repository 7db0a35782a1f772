"""``neuronsim.testing``: second implementations kept as oracles and speed baselines.

The product has one implementation of each algorithm (and the seed-faithful variants a user
selects by option).  What lives here is written again, independently, so that tests can check
the product against it and benches can time the product against it; nothing in the product
imports it.

* :mod:`neuronsim.testing.heaploop`: the simulator's timing model as a bare heapq event loop
  (the twin of :class:`neuronsim.machine.sim.engine.TimedRun`, bit-equal times);
* :mod:`neuronsim.testing.reduction`: the transitive reduction of waits on the seed's two-bank
  :class:`~neuronsim.passes.analysis.syncstate.SyncState` (the reference path of
  :func:`neuronsim.passes.dep_reduction.redundant_waits`).
"""
