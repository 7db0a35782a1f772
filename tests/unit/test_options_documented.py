"""Every option a command's ``--help`` lists is named on a page a user reads (the README or
docs/): an option only ``--help`` knows of is one nobody finds when reading how to do a thing."""

from __future__ import annotations

import click

from neuronsim.verify.cli.app import _COMMANDS, cli
from neuronsim_tests import ROOT


def _pages() -> str:
    return "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


def undocumented(pages: str) -> list[str]:
    """``COMMAND --option`` for each long option of each command that no page names."""
    missing = []
    for name in sorted(_COMMANDS):
        command = cli.get_command(click.Context(cli), name)
        for param in command.params:
            for opt in [*param.opts, *param.secondary_opts]:
                if opt.startswith("--") and opt != "--help" and opt not in pages:
                    missing.append(f"{name} {opt}")
    return missing


def test_every_option_is_named_on_a_page() -> None:
    assert undocumented(_pages()) == []


def test_the_check_sees_an_option_no_page_names() -> None:
    pages = _pages().replace("--no-shrink", "--no-shrunk")
    assert "fuzz --no-shrink" in undocumented(pages)
