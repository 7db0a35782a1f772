"""The pass pipeline's public names in one place (each lives in the module of its job).

* :mod:`neuronsim.passes.base`: :class:`Pass` (``apply`` / ``run``, ``preserves``),
  :class:`PassContext`, :class:`PassRecord`, :class:`FunctionPass`, the registry;
* :mod:`neuronsim.passes.state`: :class:`PipelineState`, what passes hand each other;
* :mod:`neuronsim.passes.spec`: :func:`parse_pipeline`, spec strings;
* :mod:`neuronsim.passes.runner`: :func:`run_pipeline` / :func:`run_passes`, the pipelines;
* :mod:`neuronsim.passes.verification`: the checks between passes;
* :mod:`neuronsim.passes.graph_deps`: deps as a graph and back, dep tables from edge dicts.
"""

from neuronsim.passes.base import PASS_REGISTRY, AfterPass, FunctionPass, Pass, PassContext, PassRecord, as_pass
from neuronsim.passes.graph_deps import edge_table, graph_of, graph_rows, with_graph
from neuronsim.passes.runner import CONSTRUCTION_PIPELINE, DEFAULT_PIPELINE, run_passes, run_pipeline
from neuronsim.passes.spec import parse_pipeline
from neuronsim.passes.state import PipelineState
from neuronsim.passes.verification import verify_program, verify_state

__all__ = [
    "Pass", "PassContext", "PassRecord", "parse_pipeline", "run_pipeline", "run_passes", "verify_program",
    "verify_state", "graph_of", "graph_rows", "with_graph", "DEFAULT_PIPELINE", "CONSTRUCTION_PIPELINE",
    "FunctionPass", "as_pass", "AfterPass", "edge_table", "PipelineState", "PASS_REGISTRY",
]
