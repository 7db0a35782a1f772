"""Analyses the passes share that are not passes themselves.

Loop dependence distance and fusion legality inputs (``distance``, ``loopgraph``), label
verification (``labels``), edge explanations (``explain``), the seed's SyncState reference
(``syncstate``) and tensor lifetimes for the allocator (``lifetimes``).
"""
