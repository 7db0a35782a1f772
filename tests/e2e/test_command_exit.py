"""A command ends without the interpreter's teardown (``verify/cli/__init__._leave``): its
status, its whole output and the exit hooks are as a normal exit leaves them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from neuronsim_tests.bad_inputs import VALID

TIMEOUT = 120

ENDING = '''
import atexit, sys
atexit.register(lambda: print("hook ran", file=sys.stderr))
sys.argv = ["neuronsim", *sys.argv[1:]]
from neuronsim.verify.cli import main
main()
'''


def _python(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", *args], cwd=folder, capture_output=True, text=True, timeout=TIMEOUT)


def test_the_status_the_output_and_the_exit_hooks_stand(tmp_path: Path) -> None:
    (tmp_path / "end.py").write_text(ENDING)
    (tmp_path / "p.json").write_text(json.dumps(VALID))
    listed = _python(tmp_path, "end.py", "run", "--list")
    assert listed.returncode == 0 and listed.stderr.strip() == "hook ran", (listed.returncode, listed.stderr)
    names = listed.stdout.split()
    assert len(names) > 10 and listed.stdout.endswith("\n")  # every line, flushed
    shown = _python(tmp_path, "end.py", "show", "p.json", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)  # one whole JSON document
    bad = _python(tmp_path, "end.py", "check", "missing.json")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 2 and "hook ran" in bad.stderr, bad.stderr


def test_a_message_status_is_printed_and_ends_with_1(tmp_path: Path) -> None:
    script = "from neuronsim.verify.cli import _leave\n_leave('bye')\n"
    (tmp_path / "leave.py").write_text(script)
    ended = _python(tmp_path, "leave.py")
    assert (ended.returncode, ended.stderr) == (1, "bye\n")
    (tmp_path / "none.py").write_text("from neuronsim.verify.cli import _leave\n_leave(None)\n")
    assert _python(tmp_path, "none.py").returncode == 0
