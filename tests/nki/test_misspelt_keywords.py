"""A keyword an NKI call does not take (machine/nki/keywords.py): a misspelling of one of its
parameters is a warning at the call's line, through ``run`` and ``nki``; keywords NKI has that
neuronsim ignores, and ones close to nothing the call takes, pass silently as on NKI."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from neuronsim.verify.cli import cli
from neuronsim.verify.nki.findings import call_findings
from neuronsim.verify.nki.run import run_traced
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module, trace_file

KERNELS = GROUP_KERNELS / "misspelt_keywords.py"


def _traced(func: str):
    return trace_file(KERNELS, func, kernel_module(KERNELS).inputs(0))


def _line(needle: str) -> int:
    (line,) = [n for n, text in enumerate(KERNELS.read_text().splitlines(), 1) if needle in text]
    return line


def test_a_misspelt_mask_is_named_with_the_parameter_meant() -> None:
    (warning,) = call_findings(_traced("mask_misspelt"))
    assert warning.severity == "warning" and warning.kind == "keyword"
    assert warning.first.endswith(f"misspelt_keywords.py:{_line('maks=')}")
    assert "'maks'" in warning.note and "did you mean 'mask'?" in warning.note and "nl.load" in warning.note


def test_each_slip_is_said_once_however_often_its_line_runs() -> None:
    found = call_findings(_traced("two_slips_in_a_loop"))
    assert [(f.first.rsplit(":", 1)[1], f.note.split(":", 1)[0]) for f in found] == [
        (str(_line("scael=")), "nisa.activation"), (str(_line("dtpye=")), "nl.multiply")]
    assert "did you mean 'scale'?" in found[0].note and "did you mean 'dtype'?" in found[1].note


def test_keywords_nki_has_or_close_to_nothing_are_silent() -> None:
    assert call_findings(_traced("options_nki_has")) == ()


def test_the_warning_is_in_the_run_and_fails_nothing() -> None:
    traced = _traced("mask_misspelt")
    report = run_traced(traced, "mask_misspelt", reference=lambda a: np.asarray(a))
    assert [f.kind for f in report.findings] == ["keyword"]
    assert not report.problems()  # every row loaded, as the call that ran without its mask does
    assert any("did you mean 'mask'?" in line for line in report.finding_lines())


def test_the_nki_command_says_it_on_standard_error(tmp_path) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **kernel_module(KERNELS).inputs(0))
    done = CliRunner().invoke(cli, ["nki", f"{KERNELS}::mask_misspelt", "--inputs", str(inputs), "-o",
                                    str(tmp_path / "p.json")])
    assert done.exit_code == 0, done.output
    (warning,) = done.stderr.splitlines()
    assert warning.startswith("warning: ")
    assert f"misspelt_keywords.py:{_line('maks=')}: nl.load: keyword 'maks'" in warning
    quiet = CliRunner().invoke(cli, ["nki", f"{KERNELS}::options_nki_has", "--inputs", str(inputs), "-o",
                                     str(tmp_path / "q.json"), "--json"])
    assert quiet.exit_code == 0 and json.loads(quiet.stdout)["warnings"] == []


def test_dst_given_to_a_legacy_call_that_returns_its_result_is_said() -> None:
    (warning,) = call_findings(_traced("legacy_call_given_dst"))
    assert warning.first.endswith(f"misspelt_keywords.py:{_line('nisa.tensor_scalar(dst=doubled')}")
    assert warning.note.startswith("nisa.tensor_scalar: the neuronxcc.nki call returns its result and takes no dst=")


def test_a_keyword_no_nki_call_takes_is_said_on_the_nki_api() -> None:
    current = GROUP_KERNELS / "unknown_keywords_current.py"
    traced = trace_file(current, "invented_and_known", kernel_module(current).inputs(0))
    (warning,) = call_findings(traced)
    line = [n for n, text in enumerate(current.read_text().splitlines(), 1) if "colour=1" in text][0]
    assert warning.first.endswith(f"unknown_keywords_current.py:{line}")
    assert "'colour' is no keyword of any NKI call" in warning.note
