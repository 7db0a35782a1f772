"""Real kernels as neuronsim programs, each with a numpy reference and a golden summary.

Every file here that defines ``build``, ``inputs`` and ``reference`` is a scenario
(:mod:`neuronsim.verify.app.scenario_runs` finds them by file; no list is kept by hand):

* ``matmul_tiled``: tiled matmul with PSUM accumulation over K;
* ``softmax``: fused softmax over rows;
* ``rmsnorm``: RMSNorm with a PE partition broadcast;
* ``flash_attention``: flash-attention forward over KV tiles (online softmax);
* ``double_buffer``: a double-buffered DMA pipeline, the slots unrolled by hand;
* ``pe_transpose``: 128 x 128 PE transposes through one PSUM bank;
* ``transpose2d``: batched 2-D PE transposes, one PSUM group per tile, a masked edge tile;
* ``layernorm``: LayerNorm v2 with ``bn_stats`` / ``bn_aggr`` and a two-operand
  ``tensor_scalar``;
* ``cross_entropy``: cross-entropy forward with an online log-sum-exp over vocabulary chunks,
  one slot per buffer placed explicitly (as LIB-XENT allocates), ``-inf`` initial maxima;
* ``mamba``: the fused Mamba selective scan with ``tensor_tensor_scan``;
* ``explicit_double_buffer``: a load / compute / store loop over hand-placed two-slot
  buffers (``x-rotate``, ``mod_alloc``), the loops kept;
* ``allocated_attention``: fused self-attention explicitly allocated (NS-ALLOC-ATT): two
  interleave groups over two-slot buffers, PSUM bank rotation, banks shared by score,
  transpose and PV tiles;
* ``allocated_fused_linear``: RMSNorm fused with a QKV matmul, explicitly allocated
  (NS-ALLOC-LIN): a double-buffered input, one-slot intermediates, PSUM banks 0 and 7.

A scenario that places every tile itself says ``placement = "explicit"`` (the tests then
check that ``alloc`` leaves it unchanged); the others leave their tiles virtual, and ``alloc``
places them and multi-buffers the loop-body ones, as NKI's allocator does for tiles declared
inside a loop.

The kernels are written with :mod:`neuronsim.machine.build.builder`, a small NKI-like builder that needs
only :mod:`machine`, and are run end to end (allocation, dependence passes, race check,
simulation, comparison with numpy) by :func:`neuronsim.verify.app.scenario_runs.run_scenario`, which loads them
from their files as it would a user's scenario.  ``matmul_k_loop.json`` is a hand-written
program shipped as is (the spec's example), not built here.
"""
