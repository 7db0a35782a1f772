"""The one palette of every picture neuronsim draws: PNG timelines, the footprint chart and the
HTML report.

Colour-blind safe, and stable from picture to picture:

* **ops** (timeline bars) - every op of the op table has its own colour, fixed here, from Paul
  Tol's *muted* and *light* qualitative schemes (designed to stay distinct under the common
  colour-vision deficiencies); an op outside the table (an opaque op, a task kernel) gets one
  of the remaining colours by a stable hash of its name, so it too keeps its colour everywhere;
* **DMA triggers** - the short slice a DMA spends on its triggering sequencer - are black with
  white hatching, never the colour of the transfer on its queue, so the two read apart;
* **dependence kinds** (the footprint chart) are greys, dark to light, and the lines over them
  (semaphore waits, the minimum) are Okabe-Ito vermillion and black: no hue of the op colours
  means anything else on the same page.

>>> op_color("matmul"), op_color("dma_copy"), op_color("matmul") == op_color("dma_copy")
('#332288', '#88CCEE', False)
>>> op_color("custom_kernel") == op_color("custom_kernel")
True
>>> run_label(None), run_label(3)
('nominal', 'seed 3')
"""

from __future__ import annotations

import zlib

__all__ = ["OP_COLORS", "EXTRA_COLORS", "op_color", "DMA_TRIGGER", "DMA_TRIGGER_HATCH", "KIND_COLORS",
           "SEMAPHORE_LINE", "MINIMUM_LINE", "RACY_OUTLINE", "run_label", "picture_title", "css_variables"]

#: Every op of the op table, its colour (Tol muted, then Tol light).
OP_COLORS: dict[str, str] = {
    "matmul": "#332288",  # indigo
    "dma_copy": "#88CCEE",  # cyan
    "activation": "#117733",  # green
    "tensor_copy": "#DDCC77",  # sand
    "transpose": "#CC6677",  # rose
    "tensor_tensor": "#AA4499",  # purple
    "tensor_scalar": "#44AA99",  # teal
    "tensor_reduce": "#882255",  # wine
    "memset": "#999933",  # olive
    "iota": "#BBCC33",  # pear
    "bn_stats": "#77AADD",  # light blue
    "bn_aggr": "#FFAABB",  # pink
    "tensor_tensor_scan": "#EEDD88",  # light yellow
    "random": "#EE8866",  # light orange
    "set_rand_state": "#44BB99",  # mint
    "get_rand_state": "#33AA88",  # mint, darker
    "affine_select": "#CC3311",  # red (Tol vibrant)
    # the search, select, cumulative, gather and transposing-DMA ops (Tol bright, dark, high contrast)
    "max8": "#4477AA",  # blue
    "nc_find_index8": "#66CCEE",  # sky
    "nc_match_replace8": "#228833",  # bright green
    "nc_stream_shuffle": "#CCBB44",  # yellow
    "tensor_scalar_cumulative": "#EE6677",  # bright red
    "range_select": "#AA3377",  # bright purple
    "select_reduce": "#222255",  # dark blue
    "tensor_copy_predicated": "#225555",  # dark cyan
    "tensor_partition_reduce": "#225522",  # dark green
    "exponential": "#44AA77",  # green, as activation
    "sequence_bounds": "#666633",  # dark yellow
    "nonzero_with_count": "#663333",  # dark red
    "nc_n_gather": "#004488",  # high-contrast blue
    "dma_transpose": "#DDAA33",  # high-contrast yellow
    "quantize_mx": "#994455",  # high-contrast dark red
    "matmul_mx": "#6699CC",  # medium-contrast light blue
    "dma_accumulate": "#997700",  # medium-contrast dark yellow
    "local_gather": "#EE99AA",  # medium-contrast light red
}
#: Colours of the ops outside the table (opaque ops, task kernels), chosen by a hash of the name.
EXTRA_COLORS: tuple[str, ...] = ("#0077BB", "#33BBEE", "#009988", "#EE7733", "#EE3377", "#AAAA00", "#99DDFF",
                                 "#BBBBBB")
#: DMA triggers (on their sequencer's row): black, hatched white.
DMA_TRIGGER = "#000000"
DMA_TRIGGER_HATCH = "////"
#: Waits by dependence kind, dark to light.
KIND_COLORS: dict[str, str] = {"flow": "#4D4D4D", "anti": "#8C8C8C", "output": "#BFBFBF", "ordered": "#E6E6E6"}
#: Lines over the kind bars: semaphore waits (Okabe-Ito vermillion) and the minimum (black, dashed).
SEMAPHORE_LINE = "#D55E00"
MINIMUM_LINE = "#000000"
#: The outline of a racy instance in the HTML timeline (Okabe-Ito vermillion).
RACY_OUTLINE = "#D55E00"


def op_color(op: str) -> str:
    """The colour of ``op`` in every picture."""
    known = OP_COLORS.get(op)
    if known is not None:
        return known
    return EXTRA_COLORS[zlib.crc32(op.encode("utf-8")) % len(EXTRA_COLORS)]


def run_label(seed: int | None) -> str:
    """``nominal`` (nominal durations) or ``seed S`` (an interleaving)."""
    return "nominal" if seed is None else f"seed {seed}"


def picture_title(program: str, what: str, seed: int | None = None, *, run: bool = True) -> str:
    """``PROGRAM, RUN: WHAT``, the title of every picture.

    >>> picture_title("matmul_tiled", "makespan 31,034.9 ns on trn1", 2)
    'matmul_tiled, seed 2: makespan 31,034.9 ns on trn1'
    """
    return f"{program}, {run_label(seed)}: {what}" if run else f"{program}: {what}"


def css_variables() -> str:
    """The palette's non-op colours as CSS custom properties (the HTML report's style sheet)."""
    names = {f"--kind-{k}": v for k, v in KIND_COLORS.items()}
    names.update({"--dma-trigger": DMA_TRIGGER, "--semaphore": SEMAPHORE_LINE, "--minimum": MINIMUM_LINE,
                  "--racy": RACY_OUTLINE})
    return ":root { " + " ".join(f"{k}: {v};" for k, v in names.items()) + " }"
