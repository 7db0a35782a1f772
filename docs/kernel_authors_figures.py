"""Write the figures docs/kernel-authors.md quotes: the line profile of the shipped flash
attention kernel (text) and its timeline (PNG), and the comparison of two matmul tutorial
variants (text).  Run from the checkout: ``.venv/bin/python docs/kernel_authors_figures.py``."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import ml_dtypes
import numpy as np

from neuronsim.verify.app.drawings import plot_timeline

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent


def _cli(*args: str) -> str:
    """What ``neuronsim ARGS`` prints (the console script's command group, in process)."""
    from neuronsim.verify.cli.app import cli

    out = io.StringIO()
    with redirect_stdout(out):
        try:
            cli.main(list(args), prog_name="neuronsim")
        except SystemExit:
            pass
    return "$ neuronsim " + " ".join(a if "/tmp" not in a else Path(a).name for a in args) + "\n" + out.getvalue()


def main_figures(work: Path) -> None:
    rng = np.random.default_rng(0)
    bf16 = ml_dtypes.bfloat16
    np.savez(work / "attn_in.npz", q=rng.uniform(-1, 1, (64, 128)).astype(bf16),
             k=rng.uniform(-1, 1, (64, 512)).astype(bf16), v=rng.uniform(-1, 1, (512, 64)).astype(bf16),
             out=np.zeros((128, 64), bf16))
    np.savez(work / "mm_in.npz", lhsT=(rng.random((1024, 2048)) / 8).astype(bf16),
             rhs=(rng.random((1024, 1024)) / 8).astype(bf16))
    attention = "scenarios/nki/flash_attention.py::flash_attention"
    (DOCS / "kernel-authors-profile.txt").write_text(_cli("profile", attention, "--inputs", str(work / "attn_in.npz")))
    matmul = "scenarios/nki/published/matmul.py"
    (DOCS / "kernel-authors-compare.txt").write_text(
        _cli("compare", f"{matmul}::matmul_hoisted", f"{matmul}::matmul_blocked", "--inputs", str(work / "mm_in.npz"),
             "--timing-only"))
    from neuronsim.machine.nki import load_kernel
    from neuronsim.nki import profile_kernel

    arrays = dict(np.load(work / "attn_in.npz"))
    profile, _ = profile_kernel(load_kernel(attention), **{k: v.view(bf16) for k, v in arrays.items()})
    plot_timeline(profile.trace, str(DOCS / "kernel-authors-attention.png"), program="flash_attention")


if __name__ == "__main__":
    import os
    import tempfile

    os.chdir(ROOT)
    with tempfile.TemporaryDirectory() as folder:
        main_figures(Path(folder))
