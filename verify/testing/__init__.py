"""``neuronsim.testing``: second implementations kept as oracles and speed baselines, and bugs
planted on purpose for the fuzzers to find.

The product has one implementation of each algorithm (and the seed-faithful variants a user
selects by option).  What lives here is written again, independently, so that tests can check
the product against it and benches can time the product against it; nothing in the product
imports it.

* :mod:`neuronsim.testing.heaploop`: the simulator's timing model as a bare heapq event loop
  (the twin of :class:`neuronsim.machine.sim.engine.TimedRun`, bit-equal times);
* :mod:`neuronsim.testing.reduction`: the transitive reduction of waits on the seed's two-bank
  :class:`~neuronsim.passes.analysis.syncstate.SyncState` (the reference path of
  :func:`neuronsim.passes.dep_reduction.redundant_waits`);
* :mod:`neuronsim.testing.alloc_oracles`: brute-force oracles of the allocator (two tensors holding
  one cell at one instance, a read that sees another writer), cell by cell over every instance;
* :mod:`neuronsim.testing.planted` / :mod:`neuronsim.testing.planted_tasks`: dependence passes
  (and a simulator) with one bug each, which ``neuronsim fuzz --pass neuronsim.testing.planted:NAME``
  must find; the tests assert that it does, ``bench/planted_table.py`` counts how fast.

They are installed (not kept under ``tests/``) so that the benches, which import the installed
package only, share them with the tests.
"""
