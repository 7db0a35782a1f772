"""The command line's cyclic collector (issue 31): off for a one-shot command, so that no full
collection scans the run's records just before the process exits; on for ``fuzz``, which
makes and drops thousands of programs in one process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "matmul_k_loop.json"
# prints, as the process ends, whether the collector was on at the end of the command (an exit
# hook's print goes to standard error once a one-shot command's output is complete)
PROBE = ("import atexit, gc; atexit.register(lambda: print('collector', gc.isenabled()));"
         "from neuronsim.verify.cli import main; main()")


@pytest.mark.parametrize("args, enabled", [
    (["show", str(EXAMPLE)], False),
    (["check", str(EXAMPLE)], False),
    (["fuzz", "--examples", "1"], True),
])
def test_the_collector_is_off_for_one_shot_commands_and_on_for_fuzz(args, enabled):
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    last = done.stdout.splitlines()[-1:] + done.stderr.splitlines()[-1:]  # one of them is the probe's line
    assert f"collector {enabled}" in last and f"collector {not enabled}" not in last, last
