"""A thread the user's code started and left running may still call ``os._exit`` once that
code has returned (probe_r F2: a kernel's thread slept a second, found the real ``os._exit``
and ended ``run`` with exit 0, nothing said, its ``--out`` folder empty).  Such a thread's
``os._exit`` is refused where it is called; any other thread's exits as ever."""

from __future__ import annotations

import os
import threading

from neuronsim.machine.formats import pyfile
from neuronsim.machine.formats.pyfile import ProcessExit, running_users_code


def test_a_lingering_threads_exit_is_refused_after_the_block_and_others_are_not() -> None:
    go, seen = threading.Event(), []

    def later() -> None:
        go.wait(30)
        try:
            os._exit(0)
        except ProcessExit as err:
            seen.append(err.call)

    with running_users_code():
        thread = threading.Thread(target=later, daemon=True)
        thread.start()
    assert thread in pyfile.LINGERING
    go.set()
    thread.join(30)
    assert seen == ["os._exit(0)"]
    # the command's own thread (and a forked child's) still reaches the real exit: not called
    # here, the stand-in passes it on unless the caller lingers
    assert threading.current_thread() not in pyfile.LINGERING and os._exit is pyfile._exit_unless_lingering
