"""The line profile (neuronsim.nki.line_profile) on the shipped flash-attention kernel, and the
run verdict (neuronsim.run/1) against its schema."""

from __future__ import annotations

import json

import jsonschema
import ml_dtypes
import numpy as np
import pytest

from neuronsim.machine.nki import load_kernel
from neuronsim.nki import profile_kernel, run_verdict
from neuronsim.nki.line_profile import NO_LINE, critical_path

from neuronsim_tests import ROOT

ATTENTION = ROOT / "scenarios" / "nki" / "flash_attention.py"
SCHEMA = json.loads((ROOT / "docs" / "schema" / "run.schema.json").read_text())


def _attention_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    bf16 = ml_dtypes.bfloat16
    d, sq, sk = 64, 128, 512
    return {"q": rng.uniform(-1, 1, (d, sq)).astype(bf16), "k": rng.uniform(-1, 1, (d, sk)).astype(bf16),
            "v": rng.uniform(-1, 1, (sk, d)).astype(bf16), "out": np.zeros((sq, d), bf16)}


@pytest.fixture(scope="module")
def attention():
    kernel = load_kernel(f"{ATTENTION}::flash_attention")
    return profile_kernel(kernel, **_attention_inputs())


def test_line_times_add_up_to_each_engines_busy_time(attention) -> None:
    profile, _report = attention
    assert profile.busy_ns and set(profile.busy_ns) >= {"pe", "act", "dve", "dma0"}
    for component, busy in profile.busy_ns.items():
        by_lines = sum(f.busy_ns.get(component, 0.0) for f in profile.lines)
        assert by_lines == pytest.approx(busy, rel=1e-9), component
    assert sum(f.instructions for f in profile.lines) == len(profile.trace)


def test_the_critical_path_tiles_the_makespan(attention) -> None:
    profile, _report = attention
    path = critical_path(profile.trace)
    assert sum(held for _, held in path) == pytest.approx(profile.makespan_ns, rel=1e-9)
    assert sum(f.critical_ns for f in profile.lines) == pytest.approx(profile.makespan_ns, rel=1e-9)
    # the path runs forward in time: each instance ends no earlier than the one before it
    ends = [max(profile.trace.records[i].end, profile.trace.records[i].issued) for i, _ in path]
    assert ends == sorted(ends) and ends[-1] == pytest.approx(profile.makespan_ns)


def test_the_lines_holding_the_critical_path_are_named(attention) -> None:
    profile, _report = attention
    source = ATTENTION.read_text().splitlines()
    held = profile.critical_lines(share=0.05)
    assert held and all(f.where != NO_LINE for f in held)
    statements = [source[int(f.where.rpartition(":")[2]) - 1].strip() for f in held]
    # the KV loads and the loop's compute chain hold it; every line named issues NKI calls
    assert all("nl." in s or "nisa." in s for s in statements), statements
    assert any(s.startswith("kt = nl.load") for s in statements), statements
    assert sum(f.critical_ns for f in held) > 0.5 * profile.makespan_ns


def test_waits_are_charged_to_what_released_them(attention) -> None:
    profile, _report = attention
    waited = [f for f in profile.lines if f.waited_ns]
    assert waited
    for f in waited:
        assert sum(f.waited_on.values()) == pytest.approx(f.waited_ns)
    matmul = next(f for f in profile.lines if f.calls == ("nisa.nc_matmul",) and f.waited_ns)
    assert any("(dma" in what or "(act" in what or "(dve" in what for what in matmul.waited_on), matmul.waited_on


def test_the_verdict_of_a_clean_kernel_validates_against_its_schema() -> None:
    kernel = load_kernel(f"{ATTENTION}::flash_attention")
    module = __import__("importlib").import_module(kernel.__module__)
    inputs = _attention_inputs()
    # arrays by position: run_kernel hands keyword arguments to the reference as the kernel's scalars
    verdict = run_verdict(kernel, *inputs.values(), reference=module.reference)
    jsonschema.validate(verdict, SCHEMA)
    assert verdict["ok"] and verdict["correctness"]["outputs_match"] and not verdict["findings"]
    assert verdict["correctness"]["reference"] == "numpy"
    assert 0 < verdict["correctness"]["largest_error"]["absolute"] < 0.01
    engines = {e["name"]: e for e in verdict["timing"]["engines"]}
    assert engines["pe"]["busy_ns"] > 0
    assert verdict["timing"]["dma_bytes"] == sum(e["dma_bytes"] for e in engines.values())
    low, high = verdict["timing"]["makespan_range_ns"]
    assert low <= verdict["timing"]["makespan_ns"] <= high


def test_the_verdict_of_a_carried_dependence_names_its_lines() -> None:
    kernel = load_kernel(f"{ROOT / 'examples' / 'nki' / 'row_sums.py'}::running_sums")
    x = np.random.default_rng(1).random((128, 2048), dtype=np.float32)
    verdict = run_verdict(kernel, x, np.zeros((128, 4), np.float32))
    jsonschema.validate(verdict, SCHEMA)
    assert not verdict["ok"]
    carried = [f for f in verdict["findings"] if f["kind"] == "carried"]
    assert carried and any(line.endswith("row_sums.py:48") for f in carried for line in f["lines"])


def test_a_verdict_missing_a_field_fails_the_schema() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"format": "neuronsim.run/1", "kernel": "k", "summary": {}, "problems": [], "ok": True,
                             "correctness": {}, "findings": [], "timing": {}}, SCHEMA)
