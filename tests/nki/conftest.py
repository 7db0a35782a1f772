"""The kernel files under ``kernels/`` import ``nki`` / ``neuronxcc.nki``, which exist only as
neuronsim's stand-ins during a trace: they are inputs of the tests, not modules to collect
(``--doctest-modules`` would import them)."""

collect_ignore = ["kernels"]
