"""How messages name a user's file (machine/ir/source.shown_path): relative under the working
folder, absolute outside it, and the file the system opens when the path climbs out of a link."""

from __future__ import annotations

import os

from neuronsim.machine.ir.source import shown_path


def test_dotdot_after_a_link_names_the_file_opened(tmp_path, monkeypatch):
    # lnk/../bad.json opens deep/bad.json; resolved as text it named ./bad.json, another file (probe_ap)
    (tmp_path / "deep" / "sub").mkdir(parents=True)
    os.symlink("deep/sub", tmp_path / "lnk")
    monkeypatch.chdir(tmp_path)
    assert shown_path("lnk/../bad.json") == os.path.join("deep", "bad.json")
    assert shown_path("lnk/k.py") == os.path.join("lnk", "k.py")  # no climb: the link's name stays
    assert shown_path("deep/sub/../bad.json") == os.path.join("deep", "bad.json")
    assert shown_path(str(tmp_path / "x.py")) == "x.py"
