"""A kernel file whose module code fails at import (a name the file never imports, as
nki-library's test_qkv_tkg.py does): the load is refused at this file's line."""

import nki
import nki.language as nl

LAYOUTS = [Platforms.TRN2]  # noqa: F821  (never imported: NameError at import)


@nki.jit
def copy(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(x))
    return out
