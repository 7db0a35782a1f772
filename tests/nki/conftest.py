"""The kernels under tests/nki/kernels are NKI source, imported with the stand-ins, not tests."""

collect_ignore = ["kernels"]
