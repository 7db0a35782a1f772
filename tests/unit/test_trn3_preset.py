"""The ``trn3`` preset (NeuronCore-v4) against the constant tables of docs/timing.md.

The docs are the place each constant is sourced; this reads the trn3 column of the two timing
tables and the "trn3 preset" table back out of the page, so a change to the preset that the
docs do not follow (or the reverse) fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuronsim.machine.model.presets import PRESETS, resolve_machine

ROOT = Path(__file__).resolve().parents[2]
TIMING = (ROOT / "docs" / "timing.md").read_text()


def _trn3_column() -> dict[str, float]:
    """``field -> trn3 value`` from every ``| `a`, `b` | trn1 | trn2 | trn3 | source |`` row (a
    yes / no cell is a flag: 1 / 0)."""
    values: dict[str, float] = {}
    for line in TIMING.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("`"):
            continue
        for name in re.findall(r"`(\w+)`", cells[0]):
            flag = {"yes": 1.0, "no": 0.0}.get(cells[3])
            values[name] = flag if flag is not None else float(cells[3].replace(",", ""))
    return values


def test_every_timing_constant_has_a_trn3_column_matching_the_preset():
    column = _trn3_column()
    spec = PRESETS["trn3"]
    # the timing constants docs/timing.md tables: clocks, overheads, DMA figures
    assert {"pe_ghz", "dve_ghz", "act_ghz", "pool_ghz", "sp_ghz", "dma_engine_bytes_per_ns",
            "dma_core_bytes_per_ns", "swdge_ns", "hwdge_ns", "dma_fixed_ns", "result_latency_ns"} <= column.keys()
    for name, documented in column.items():
        assert getattr(spec, name) == pytest.approx(documented), name


def test_memory_figures_follow_the_v4_architecture_guide():
    spec = resolve_machine("trn3")
    # ARCH-v4: SBUF 32 MiB over 128 partitions, PSUM 2 MiB (8 banks of 2 KiB a partition)
    assert "32 MiB" in TIMING and "2 MiB" in TIMING
    assert spec.sbuf_partitions * spec.sbuf_partition_bytes == 32 * 2**20
    assert spec.sbuf_partitions * spec.psum_partition_bytes == 2 * 2**20
    assert spec.dma_engines == 16 and spec.dma_engines * spec.dma_engine_bytes_per_ns == spec.dma_core_bytes_per_ns
    assert spec.has_hwdge


def test_unpublished_v4_figures_keep_the_v3_values():
    """docs/timing.md: figures no v4 page gives keep trn2's."""
    trn2, trn3 = PRESETS["trn2"], PRESETS["trn3"]
    for name in ("min_ii_cycles", "pool_start_cycles", "pe_overhead_cycles", "act_overhead_cycles",
                 "dve_overhead_cycles", "sp_overhead_cycles", "swdge_ns", "hwdge_ns", "dma_fixed_ns",
                 "dma_descriptor_ns", "result_latency_ns"):
        assert getattr(trn3, name) == getattr(trn2, name), name
        assert f"`{name}`" in TIMING


def test_trn3_is_an_override_base_and_traces_as_neuroncore_v4():
    import numpy as np

    from neuronsim.machine.nki import NkiError, standins, trace

    spec = resolve_machine({"base": "trn3", "dma_queues": 4})
    assert spec.name == "trn3" and spec.dma_queues == 4 and spec.dve_ghz == 1.2
    seen = []
    with standins():
        import nki.isa as nisa
        import nki.language as nl

        def kernel(x):
            seen.append(nisa.get_nc_version())
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            # 256 KiB a partition: a tile of 60,000 fp32 (240,000 bytes) fits trn3, not trn2's 224 KiB
            big = nl.ndarray((128, 60000), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=big[:, 0:64], src=x)
            nisa.dma_copy(dst=out, src=big[:, 0:64])
            return out

        trace(kernel, np.ones((128, 64), np.float32), machine="trn3")
        assert seen == [nisa.nc_version.gen4]
        seen.clear()
        with pytest.raises(NkiError, match="more than the 229376 of an SBUF partition"):
            trace(kernel, np.ones((128, 64), np.float32), machine="trn2")
        assert seen == [nisa.nc_version.gen3]
