"""The compiler keeps the top of each SBUF partition for itself (16 KiB on NeuronCore-v2, 16
KiB + 8 B from v3 on): ``alloc`` places tiles below it, a program's own placements may use the
whole partition, and a machine override may set the reserve (0 for none)."""

from __future__ import annotations

import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.model.presets import PRESETS, resolve_machine


@pytest.mark.parametrize(("preset", "reserve"), [("trn1", 16384), ("trn2", 16392), ("trn3", 16392)])
def test_each_preset_reserves_what_the_public_figures_give(preset: str, reserve: int):
    spec = PRESETS[preset]
    assert spec.sbuf_reserved_bytes == reserve
    assert spec.sbuf_allocatable_bytes == spec.sbuf_partition_bytes - reserve


def test_nki_librarys_trn2_mlp_budget_is_the_allocatable_bytes_less_its_own_256():
    # nkilib/core/mlp/mlp_cte/mlp_cte_constants.py: MAX_AVAILABLE_SBUF_SIZE = 224 * 1024 - 16384 - 8 - 256
    assert PRESETS["trn2"].sbuf_allocatable_bytes - 256 == 224 * 1024 - 16384 - 8 - 256


def test_an_override_may_remove_the_reserve_or_change_it():
    assert resolve_machine({"base": "trn1", "sbuf_reserved_bytes": 0}).sbuf_allocatable_bytes == 192 * 1024
    assert resolve_machine({"base": "trn2", "sbuf_reserved_bytes": 4096}).sbuf_allocatable_bytes == 224 * 1024 - 4096


@pytest.mark.parametrize("raw", [-1, 0.5, True, "16k", 192 * 1024, 10**6])
def test_a_reserve_that_is_not_a_count_or_leaves_no_room_is_refused_at_its_path(raw):
    with pytest.raises(ProgramError) as err:
        resolve_machine({"base": "trn1", "sbuf_reserved_bytes": raw})
    assert err.value.path == "machine.sbuf_reserved_bytes"


def test_a_partition_override_below_the_preset_reserve_is_refused_at_its_own_path():
    with pytest.raises(ProgramError) as err:
        resolve_machine({"base": "trn1", "sbuf_partition_bytes": 8192})
    assert err.value.path == "machine.sbuf_partition_bytes" and "reserve" in err.value.message
    assert resolve_machine({"base": "trn1", "sbuf_partition_bytes": 8192, "sbuf_reserved_bytes": 0}
                           ).sbuf_allocatable_bytes == 8192


def test_a_spec_built_in_code_keeps_the_same_rule():
    from dataclasses import replace

    with pytest.raises(ValueError, match="sbuf_reserved_bytes"):
        replace(PRESETS["trn1"], sbuf_partition_bytes=4096)
