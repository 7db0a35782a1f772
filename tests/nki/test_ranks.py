"""Collectives across ranks (machine/nki/ranks.py): a kernel launched on ``ranks=N`` devices,
each with its own HBM, meeting at its ``nki.collectives`` calls.  Expectations are numpy, per
rank (rank r's outputs are ``NAME_rank{r}``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import KERNELS, kernel, run
from neuronsim_tests.nki_kit import line_of

SOURCE = Path(KERNELS) / "ranks.py"
RNG = np.random.default_rng(5)
GROUP = [[0, 1, 2]]


def test_all_reduce_sums_every_ranks_source_into_every_rank():
    x = RNG.normal(size=(64, 32)).astype(np.float32)
    out = run(kernel("ranks.py::summed"), x, GROUP, ranks=3, seeds=(None, 0, 1))
    expected = 3 * x + (0 + 1 + 2)
    for name in ("return0", "return0_rank1", "return0_rank2"):
        np.testing.assert_allclose(out[name], expected, rtol=1e-6, atol=1e-6, err_msg=name)


def test_each_rank_may_start_from_its_own_values_of_an_input():
    """``x_rank{r}`` beside ``x`` gives rank r its own values (nki-library's all_gather and
    reduce_scatter tests give each rank its own input); without it every rank gets x's."""
    x, x1, x2 = (RNG.normal(size=(64, 32)).astype(np.float32) for _ in range(3))
    out = run(kernel("ranks.py::summed"), x, GROUP, ranks=3, x_rank1=x1, x_rank2=x2)
    for name in ("return0", "return0_rank1", "return0_rank2"):
        np.testing.assert_allclose(out[name], x + x1 + x2 + 3, rtol=1e-5, atol=1e-5, err_msg=name)
    with pytest.raises(NkiError, match=r"argument x_rank1: shape \(8, 32\), and rank 0's is \(64, 32\)"):
        trace(kernel("ranks.py::summed"), x, GROUP, ranks=3, x_rank1=x1[:8])


def test_the_collectives_take_their_pages_positional_order():
    """all_reduce(srcs, dsts, replica_group, op): neuronsim took dsts first, so the page's own
    order swapped source and destination (or, with op fourth, stopped on an internal error)."""
    x = RNG.normal(size=(16, 8)).astype(np.float32)
    out = run(kernel("ranks.py::summed_positionally"), x, [[0, 1]], ranks=2)
    total = 2 * x + 1
    for name in ("return0", "return0_rank1"):
        np.testing.assert_allclose(out[name], np.concatenate([total, total]), rtol=1e-6, atol=1e-6, err_msg=name)


def test_all_gather_puts_member_js_source_in_chunk_j():
    x = RNG.normal(size=(16, 8)).astype(np.float32)
    out = run(kernel("ranks.py::gathered"), x, GROUP, 3, ranks=3)
    expected = np.concatenate([x, 2 * x, 3 * x])
    for name in ("return0", "return0_rank2"):
        np.testing.assert_allclose(out[name], expected, rtol=1e-6, atol=1e-6, err_msg=name)


def test_reduce_scatter_and_all_to_all_by_the_ranks_place_in_the_group():
    x = RNG.normal(size=(12, 8)).astype(np.float32)
    group = [[0, 1], [2, 3]]
    out = run(kernel("ranks.py::scattered_and_exchanged"), x, group, 2, ranks=4)
    chunks = np.split(x, 2)
    for rank in range(4):
        suffix = "" if rank == 0 else f"_rank{rank}"
        members = [m for g in group if rank in g for m in g]
        mine = members.index(rank)
        reduced = sum((m + 1) * chunks[mine] for m in members)
        exchanged = np.concatenate([(m + 1) * chunks[mine] for m in members])
        np.testing.assert_allclose(out[f"return0{suffix}"], reduced, rtol=1e-6, err_msg=f"rank {rank}")
        np.testing.assert_allclose(out[f"return1{suffix}"], exchanged, rtol=1e-6, err_msg=f"rank {rank}")


def test_a_collective_without_ranks_is_refused_as_beyond_one_core_at_its_line():
    x = RNG.normal(size=(64, 32)).astype(np.float32)
    with pytest.raises(NkiError) as info:
        trace(kernel("ranks.py::summed"), x, GROUP)
    where, _, what = str(info.value).partition(": ")
    assert where.endswith(f"ranks.py:{line_of(SOURCE, 'operand0=float(ncc.rank_id())')}")
    assert "neuronsim models one NeuronCore" in what and "ranks=N" in what


def test_all_reduce_by_maximum_and_minimum():
    x = RNG.normal(size=(64, 32)).astype(np.float32)
    out = run(kernel("ranks.py::max_min_reduced"), x, [[0, 1, 2]], ranks=3)
    scaled = [x * (r - 1) for r in range(3)]
    for rank in range(3):
        suffix = "" if rank == 0 else f"_rank{rank}"
        np.testing.assert_array_equal(out[f"return0{suffix}"], np.maximum.reduce(scaled), err_msg=f"rank {rank}")
        np.testing.assert_array_equal(out[f"return1{suffix}"], np.minimum.reduce(scaled), err_msg=f"rank {rank}")


def test_an_op_a_collective_cannot_reduce_by_is_refused_at_its_line():
    x = RNG.normal(size=(64, 32)).astype(np.float32)
    with pytest.raises(NkiError) as info:
        trace(kernel("ranks.py::product_reduced"), x, [[0, 1]], ranks=2)
    where, _, what = str(info.value).partition(": ")
    assert where.endswith(f"ranks.py:{line_of(SOURCE, 'op=nl.multiply')}")
    assert what == ("nki.collectives.all_reduce(op=multiply) is not supported (the collectives reduce by nl.add, "
                    "nl.maximum or nl.minimum)")


def test_the_run_command_launches_a_kernel_on_ranks(tmp_path):
    from click.testing import CliRunner

    from neuronsim.verify.cli import cli

    np.savez(tmp_path / "in.npz", x=RNG.normal(size=(32, 16)).astype(np.float32))
    args = ["run", f"{SOURCE}::summed", "--inputs", str(tmp_path / "in.npz"), "--arg", "replica_group=[[0, 1]]",
            "--out", str(tmp_path / "out"), "--json"]
    result = CliRunner().invoke(cli, [*args, "--ranks", "2"])
    assert result.exit_code == 0, result.output[-2000:]
    assert '"return0_rank1"' in result.output
    refused = CliRunner().invoke(cli, args)  # without --ranks: the collective is refused at its line
    assert refused.exit_code == 2 and "ranks=N" in refused.output, refused.output[-2000:]


def test_a_ring_step_brings_each_rank_its_predecessors_data():
    x = RNG.normal(size=(32, 8)).astype(np.float32)
    group = [[2, 0, 1]]  # ring order as the group lists it: 2 -> 0 -> 1 -> 2
    out = run(kernel("ranks.py::ring_passed"), x, group, ranks=3)
    before = {0: 2, 1: 0, 2: 1}
    for rank in range(3):
        got = out["return0" if rank == 0 else f"return0_rank{rank}"]
        sender = before[rank]
        np.testing.assert_allclose(got[0], (sender + 1) * x, rtol=1e-6, err_msg=f"rank {rank}")
        assert np.all(got[1] == sender), f"rank {rank}: iteration 1 processes rank {sender}'s data"
        np.testing.assert_allclose(got[2], (sender + 1) * x + x, rtol=1e-6, atol=1e-6, err_msg=f"rank {rank}")


def test_run_kernel_takes_ranks():
    from neuronsim.verify.nki.run import run_kernel

    x = RNG.normal(size=(16, 8)).astype(np.float32)
    outputs, report = run_kernel(kernel("ranks.py::summed"), x, replica_group=[[0, 1]], ranks=2)
    assert report.problems() == []
    rank0, rank1 = outputs  # every rank's returned array, rank 0's first
    for got in (rank0, rank1):
        np.testing.assert_allclose(got, 2 * x + 1, rtol=1e-6, atol=1e-6)  # the sum over ranks of x + r


@pytest.mark.parametrize("call, buffer, dim, coalesced, words", [
    ("all_to_all", "sbuf", 0, False, "tensors in sbuf; its page takes them all on HBM"),
    ("all_gather", "hbm", 1, False, "collective_dim=1 on HBM; its page allows 0 there"),
    ("reduce_scatter", "sbuf", 1, False, "collective_dim=1 on SBUF; its page allows 0 there"),
    ("all_reduce", "mixed", 0, False, "tensors in hbm and sbuf; its page takes them all on HBM or all on SBUF"),
    ("all_gather", "sbuf", 0, True, "2 tensors at once (coalesced) on SBUF; its page allows that on HBM only"),
])
def test_the_collectives_pages_rules_on_where_tensors_are(call, buffer, dim, coalesced, words):
    """Each ran (a helper's sweep: all_to_all on SBUF, all_gather along dim 1 of HBM tensors),
    though the call's reference page says it is not supported; refused at the call's line."""
    x = RNG.normal(size=(4, 8)).astype(np.float32)
    with pytest.raises(NkiError, match=re.escape(words)) as info:
        trace(kernel("ranks.py::placed_against_the_page"), x, [[0, 1]], call, buffer, dim, coalesced, ranks=2)
    needle = f"ncc.{call}(dsts=dsts" if call in ("all_reduce", "reduce_scatter") else "getattr(ncc, call)"
    assert f"ranks.py:{line_of(SOURCE, needle)}" in str(info.value)


def test_what_the_pages_allow_runs():
    x = RNG.normal(size=(4, 8)).astype(np.float32)
    for call, buffer, dim in (("all_gather", "sbuf", 1), ("all_reduce", "sbuf", 0), ("reduce_scatter", "hbm", 0),
                              ("all_to_all", "hbm", 0)):
        trace(kernel("ranks.py::placed_against_the_page"), x, [[0, 1]], call, buffer, dim, False, ranks=2)


GROUPS = '''
import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


@nki.jit
def reduced(x, replica_group):
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=src, src=t)
    op = nl.add if ncc.rank_id() == 0 else nl.maximum if replica_group == "by rank" else nl.add
    groups = [[0, 1]] if replica_group == "by rank" else replica_group
    ncc.all_reduce([src], [dst], groups, op)  # the collective
    return dst
'''


@pytest.mark.parametrize("group, words", [
    ([[0, 1], [1]], "replica_group=[[0, 1], [1]] names rank 1 twice; the ReplicaGroup page: \"Each rank in the "
                    "replica-group must participate in only one rank-list\""),
    ("by rank", "nki.collectives.all_reduce(op=max, replica_group=[[0, 1]]) meets "
                "nki.collectives.all_reduce(op=add, replica_group=[[0, 1]]) of rank 0"),
])
def test_a_collective_the_ranks_do_not_agree_on_is_one_line_at_the_call(tmp_path, group, words):
    """A rank in two groups, and ranks reducing by different ops, ran (the second caught only by
    the comparison with numpy: a probe of multi-instance kernel mistakes)."""
    from neuronsim.machine.nki import load_kernel

    (tmp_path / "g.py").write_text(GROUPS)
    line = next(k for k, text in enumerate(GROUPS.splitlines(), 1) if "# the collective" in text)
    with pytest.raises(NkiError) as caught:
        trace(load_kernel(f"{tmp_path / 'g.py'}::reduced"), RNG.normal(size=(16, 8)).astype(np.float32), group,
              ranks=2)
    text = str(caught.value)
    assert text.startswith(f"g.py:{line}: ") and words in text and "\n" not in text, text


def test_a_collective_in_place_is_a_finding_about_ranks_not_cores(tmp_path):
    """dsts=[part], srcs=[part]: rank 1 reads rank 0's part while rank 0's reduction writes it; it
    was told as two cores racing, with a core_barrier (refused on ranks) as its fix: a probe."""
    from neuronsim.machine.nki import load_kernel
    from neuronsim.verify.nki.findings import nki_findings

    (tmp_path / "g.py").write_text(GROUPS.replace("ncc.all_reduce([src], [dst], groups, op)",
                                                  "ncc.all_reduce([src], [src], groups, op)").replace("return dst",
                                                                                                      "return src"))
    traced = trace(load_kernel(f"{tmp_path / 'g.py'}::reduced"), RNG.normal(size=(16, 8)).astype(np.float32),
                   [[0, 1]], ranks=2)
    found = [f for f in nki_findings(traced.program, traced.run_inputs) if f.kind in ("cores", "ranks")]
    assert found and {f.kind for f in found} == {"ranks"}
    text = found[0].describe()
    assert "the ranks touch the same HBM bytes" in text and "core_barrier" not in text, text
