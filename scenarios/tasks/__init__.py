"""Orchestration programs (``neuronsim.tasks/1``) of real workloads, built with the task builder.

Each file defining ``build_tasks`` is a task scenario (:mod:`neuronsim.verify.tasks.scenarios` finds them
by file and ships each as ``NAME.json`` beside it):

* ``paged_attention``: a paged-attention decode loop over KV-cache blocks (block table lookups
  as runtime offsets, online-softmax state carried across blocks);
* ``gemm_splitk``: a tiled GEMM with split-K partial products and reduction tasks;
* ``moe_dispatch``: a mixture-of-experts dispatch with a dynamic expert loop.

``neuronsim run NAME`` runs one: the task passes, the runtime tracking they save, the race
check statically and over simulated runs.
"""
