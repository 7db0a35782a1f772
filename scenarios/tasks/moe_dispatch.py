"""Mixture-of-experts dispatch with a dynamic expert loop.

Scenario
    A router scores ``TOKENS`` tokens and writes the routing table; the orchestrator then
    walks the experts that received tokens (``active``: a runtime trip count, known only after
    routing, as in PyPTO's dynamic ``pl.range``).  Per expert: ``dispatch`` copies the expert's
    tokens into its slot of a capacity buffer (reading the routing table), ``ffn_up`` and
    ``ffn_down`` run the expert's two projections on that slot through a hidden buffer reused
    by every expert, and ``combine`` adds the expert's weighted output into the token output
    ``y`` (an in-place update of the whole output: experts' tokens interleave).  A final
    ``norm`` reads ``y``.

What the passes do
    The hidden buffer is rewritten by every expert (WAR / WAW across iterations of the dynamic
    loop: the back-edge walk orders each ``ffn_up`` after the previous expert's ``ffn_down``),
    ``combine`` chains on ``y``, and ``norm`` gets a fan-in on the last ``combine``; with every
    hazard covered the whole body becomes MANUAL and no slot is looked up.
"""

from __future__ import annotations

from neuronsim.machine.tasks.task_builder import In, InOut, Out, TaskBuilder
from neuronsim.machine.tasks.ir import TaskProgram

TOKENS, HIDDEN, FFN, EXPERTS, CAP = 256, 256, 512, 8, 64


def build_tasks() -> TaskProgram:
    tb = TaskBuilder("moe_dispatch", cores=8)
    route = tb.kernel("router", In("x"), Out("table"), returns="table", cost=1200)
    dispatch = tb.kernel("dispatch", In("x"), In("table"), Out("slot"), returns="slot", cost=500)
    up = tb.kernel("ffn_up", In("slot"), In("w"), Out("h"), returns="h", cost=2500)
    down = tb.kernel("ffn_down", In("h"), In("w"), Out("o"), returns="o", cost=2500)
    combine = tb.kernel("combine", In("o"), In("table"), InOut("y"), returns="y", cost=600)
    norm = tb.kernel("norm", In("y"), Out("z"), returns="z", cost=800)
    x = tb.param("x", (TOKENS, HIDDEN), "bfloat16")
    w_up = tb.param("w_up", (EXPERTS * HIDDEN, FFN), "bfloat16")
    w_down = tb.param("w_down", (EXPERTS * FFN, HIDDEN), "bfloat16")
    y = tb.param("y", (TOKENS, HIDDEN), "float32", direction="inout")
    z = tb.param("z", (TOKENS, HIDDEN), "bfloat16", direction="out")
    active = tb.scalar("active", value=5)
    table = tb.create((TOKENS, 2), "int32", name="table")
    slots = tb.create((EXPERTS * CAP, HIDDEN), "bfloat16", name="slots")
    hidden = tb.create((CAP, FFN), "bfloat16", name="hidden")
    outs = tb.create((CAP, HIDDEN), "bfloat16", name="expert_out")
    tb.submit(route, [x, table], name="router", task_id="t_route")
    for e in tb.range(active, name="experts"):
        slot = tb.slice(slots, (CAP, HIDDEN), (e * CAP, 0), name="slot")
        tb.submit(dispatch, [x, table, slot], name="dispatch", task_id="t_dispatch")
        wu = tb.slice(w_up, (HIDDEN, FFN), (e * HIDDEN, 0), name="wu")
        wd = tb.slice(w_down, (FFN, HIDDEN), (e * FFN, 0), name="wd")
        tb.submit(up, [slot, wu, hidden], name="ffn_up", task_id="t_ffn_up")
        tb.submit(down, [hidden, wd, outs], name="ffn_down", task_id="t_ffn_down")
        tb.submit(combine, [outs, table, y], name="combine", task_id="t_combine")
    tb.submit(norm, [y, z], name="norm", task_id="t_norm")
    return tb.program()
