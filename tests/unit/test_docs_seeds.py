"""``docs/seeds.md``: every mechanism the three backend seeds name has a row, and every place a
row names exists in the code."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

PAGE = Path("docs/seeds.md").read_text()

#: The names the seeds give their functions, gates, filters and options.
SEED_NAMES = [
    # the dependence graph
    "EdgeKind", "addEdge", "getFlowDeps", "getAntiDeps", "addDependency", "constructBIRGraph", "too_many_spills",
    "draw_trivial_deps", "get_inst_order", "EvaluateAps", "make_linear_dependencies", "op-41",
    "make_reduction_sequence", "op-10 / op-23", "supersetAP", "doAccessesOverlap", "make_accumulation_sequence",
    "num_writers", "build_loop_body_ordering", "build_rng_state_ordering", "build_accumulator_groups",
    "addDependenciesAmongSchedulingUnits", "add_register_dependencies", "AntiDependencyAnalyzer",
    "_post_shared_dram", "getArchModel", "collectPartitionRanges", "populateSbUseMap", "populatePsumUseMaps",
    "populateAliasUseMap", "split_interval_map", "enqueueUseBatch", "getBankId", "run::Task",
    "processDependenciesForAccessPatterns", "inCommonLoopNest", "processOutputMatmul", "Explaining why",
    # the reduction
    "ExpandSchedulingUnits", "DepOpt::run", "erase_loop_dependencies", "sync_psum_accesses", "insert_memsets",
    "sync_dve_pool", "sync_tiled_matmult_matmultmx", "set_first_matmults", "sanitize_matmult_stc_bits",
    "flip_one_matmult", "Skipping dependency reduction pass.", "enable-anti-dependence-reduction", "SyncState",
    "setCompleted", "assignIds", "applyReorderReduction", "mergeSyncStates", "hasCompleted", "recordSyncState",
    "getInstSyncType", "procAsync", "procAsyncSecondaryEdges", "minimizeSyncState", "andnot_inplace",
    "RedundantAsyncRemover", "procAsyncRedundantDescendants", "applyAntiDependenceReduction",
    "verifyAntiDependence", "Inconsistent dependence labeling on:",
    # the distance
    "constructPolyhedralDependenceGraphWithDistance", "collectInstructionsByNestingLevel",
    "constructLoopDependenceGraph", "DDGTy", "viewDependenceGraph", "getDefUseDistance", "niters1 / niters != 0",
    "bir::intersecting", "has_negative_distance", "collect_def_in_loop", "collect_use_in_loop",
    "collect_illegal_common_ap", "checkLoopFusionGreedy", "distanceThreshold", "interchange", "STOP FUSION",
]

STATUSES = ("faithful", "quirk", "improved", "option", "n/a", "extension")


@pytest.mark.parametrize("name", SEED_NAMES)
def test_every_seed_mechanism_has_a_row(name):
    rows = [line for line in PAGE.splitlines() if line.startswith("|") and name in line]
    assert rows, f"{name!r} is not on docs/seeds.md"
    assert any(any(status in row.rsplit("|", 2)[1] for status in STATUSES) for row in rows), rows


def _places() -> list[str]:
    return sorted(set(re.findall(r"`(neuronsim\.(?:passes|machine|verify)\.[A-Za-z_][\w.]*)`", PAGE)))


def test_the_page_names_places():
    assert len(_places()) > 60


@pytest.mark.parametrize("place", _places())
def test_every_place_exists(place):
    parts = place.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return
    raise AssertionError(f"{place} names no module")
