"""Building programs from Python: the NKI-like :class:`~.builder.KernelBuilder` and its tensor
views (:mod:`.views`), which the shipped scenarios and the NKI frontend emit programs with.

Builds on the IR, the machine model and the format's validation.
"""
