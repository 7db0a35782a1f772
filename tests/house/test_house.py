"""The house: rooms that import one way, no circle, every package installed, and an import name
that a user's own ``machine/`` or ``passes/`` folder cannot shadow."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import networkx as nx

from neuronsim_tests.house_imports import FOLDERS, ROOT, import_edges, installed_name, module_files, room_of

#: Rooms from the bottom up: a module may import its own room and the rooms before it, never
#: one after it.  A new room goes into this list where its imports put it.
ROOMS = (
    "neuronsim.machine.ir",
    "neuronsim.machine.model",
    "neuronsim.machine.order",
    "neuronsim.machine.formats",
    "neuronsim.machine.build",
    "neuronsim.machine.tasks",
    "neuronsim.machine.sim",
    "neuronsim.machine.nki",
    "neuronsim.machine",
    "neuronsim.passes.analysis",
    "neuronsim.passes",
    "neuronsim.passes.tasks",
    "neuronsim.scenarios",
    "neuronsim.scenarios.tasks",
    "neuronsim.verify",
    "neuronsim.verify.app",
    "neuronsim.verify.tasks",
    "neuronsim.verify.nki",
    "neuronsim.nki",
    "neuronsim.verify.cli",
    "neuronsim.testing",
    "neuronsim.examples",
)


def test_rooms_import_one_way() -> None:
    rank = {room: i for i, room in enumerate(ROOMS)}
    back = sorted(
        f"{a} -> {b}"
        for a, b in import_edges()
        if rank[room_of(b, ROOMS)] > rank[room_of(a, ROOMS)]
    )
    assert not back, "imports that run back up the rooms: " + "; ".join(back)


def test_no_import_circle() -> None:
    graph = nx.DiGraph(sorted(import_edges()))
    assert nx.is_directed_acyclic_graph(graph), f"import circle: {nx.find_cycle(graph)}"


def test_the_checks_see_a_planted_back_edge_and_circle(tmp_path: Path) -> None:
    # The two checks above read source files: plant a file that imports upwards and one that
    # closes a circle, and both must be seen.
    modules = module_files()
    low = tmp_path / "low.py"
    low.write_text("from neuronsim.verify.racecheck import check_program\n")
    modules["neuronsim.machine.ir.low"] = low
    edges = import_edges(modules)
    assert ("neuronsim.machine.ir.low", "neuronsim.verify.racecheck") in edges
    rank = {room: i for i, room in enumerate(ROOMS)}
    assert rank[room_of("neuronsim.verify.racecheck", ROOMS)] > rank[room_of("neuronsim.machine.ir.low", ROOMS)]
    modules["neuronsim.machine.ir.low"].write_text("from neuronsim.machine.ir.high import x\n")
    high = tmp_path / "high.py"
    high.write_text("def f():\n    from neuronsim.machine.ir.low import y\n")
    modules["neuronsim.machine.ir.high"] = high
    assert not nx.is_directed_acyclic_graph(nx.DiGraph(sorted(import_edges(modules))))


def test_every_package_folder_is_installed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {installed_name(p.parent.relative_to(ROOT))
               for folder in FOLDERS for p in (ROOT / folder).rglob("__init__.py")}
    assert set(config["packages"]) == folders
    tops = {f"neuronsim.{f}": f for f in FOLDERS}
    assert {p: f for p, f in config["package-dir"].items() if p in tops} == tops
    # any other mapping is a package whose folder sits inside one of these (the top level is fixed)
    assert all(f.split("/")[0] in tops.values() and f not in tops.values()
               for p, f in config["package-dir"].items() if p not in tops)


def test_user_folders_named_like_ours_do_not_collide(tmp_path: Path) -> None:
    # A compiler's repository with its own passes/ and machine/ packages: a script run there
    # still gets neuronsim's API, and the user's own packages stay theirs.
    for name in ("passes", "machine", "verify", "scenarios"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"OWNER = 'user {name}'\n")
    script = tmp_path / "use_neuronsim.py"
    script.write_text(textwrap.dedent("""
        import machine, passes
        from neuronsim.verify.fuzz import check_pass
        from neuronsim.passes import DepReduction, compile_program
        from neuronsim.machine import load_program
        assert machine.OWNER == "user machine" and passes.OWNER == "user passes"
        print("ok", check_pass.__module__, DepReduction.name)
    """))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["ok", "neuronsim.verify.fuzz", "dep-reduction"]
