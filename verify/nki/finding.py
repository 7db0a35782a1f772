"""One NKI-specific finding, located at the kernel's lines (what :mod:`.findings` and
:mod:`.lifetimes` report)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NkiFinding"]


@dataclass(frozen=True, slots=True)
class NkiFinding:
    """One NKI-specific problem, located."""

    kind: str
    """``carried``, ``sbuf-accumulate``, ``psum-accumulate``, ``allocation``, ``cores`` (two cores unordered on HBM),
    ``ranks`` (two ranks of a launch on ranks unordered on HBM), ``programs`` (two programs of a grid likewise),
    ``uninitialised`` (bytes read before anything wrote them) or ``keyword`` (a call given a keyword that misspells
    one of its parameters: ``first`` is the call's line, ``note`` the words), or ``range`` (an activation the
    simulated run gave inputs outside its function's valid range: :mod:`.value_ranges`)."""
    dependence: str
    """RAW, WAW or WAR (``+=`` is a RAW on itself); ``RW`` or WAW between two cores (no order)."""
    first: str
    """The earlier instance, named by its kernel line when known."""
    second: str
    loop: str | None = None
    distance: int | None = None
    """Iterations of ``loop`` between the two instances."""
    tensors: tuple[str, ...] = ()
    severity: str = "error"
    """``error`` (the kernel is wrong: ``neuronsim run`` exits 1) or ``warning`` (the sources
    disagree on whether it is: said, with both, and the run does not fail)."""
    note: str = ""
    """What decided the severity, when values did (two cores: which outputs the other order changes)."""

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def line(self) -> str:
        """``finding: ...`` or ``warning: ...``: how the commands print it."""
        return f"{'finding' if self.is_error else 'warning'}: {self.describe()}"

    def describe(self) -> str:
        """One line for people."""
        tensors = f" on {' / '.join(self.tensors)}" if self.tensors else ""
        if self.kind == "sbuf-accumulate":
            return (f"+= into SBUF{tensors} across the iterations of affine loop {self.loop} ({self.first} / "
                    f"{self.second}): the affine_range docs call an associative reduction no loop-carried "
                    f"dependence, but an SDK maintainer says += is reliable only for a matmul into PSUM "
                    f"(aws-neuron-sdk#1051); sequential_range, or accumulating in PSUM, is safe under both")
        if self.kind == "psum-accumulate":
            return (f"+= into PSUM by an instruction other than a matmul{tensors} across the iterations of affine "
                    f"loop {self.loop} ({self.first} / {self.second}): the affine_range docs allow matmuls "
                    f"accumulating into one PSUM buffer, and an SDK maintainer says += is reliable only for a "
                    f"matmul into PSUM (aws-neuron-sdk#1051); sequential_range is safe")
        if self.kind == "carried" and self.dependence == "WAW":
            fixes = (f"or use sequential_range ({self.note})" if self.note else
                     "declare the tile inside the loop, or use sequential_range")
            return (f"iterations of affine loop {self.loop} {self.distance} apart write the same bytes{tensors}: "
                    f"{self.first} / {self.second}; affine_range iterations may run in parallel, so which write "
                    f"stays is not defined (the compiler's 'unexpected output dependencies'): index the "
                    f"destination by the loop variable, {fixes}")
        if self.kind == "carried":
            return (f"affine loop {self.loop} carries a {self.dependence} dependence at distance {self.distance}: "
                    f"{self.first} / {self.second}{tensors}; {self.note + '; ' if self.note else ''}the compiler "
                    f"does not order affine_range iterations (use sequential_range, or make the iterations "
                    f"independent)")
        if self.kind == "cores":
            return (f"the two cores touch the same HBM bytes{tensors} with no meeting between them ({self.first} on "
                    f"core 0 / {self.second} on core 1, {'both writing' if self.dependence == 'WAW' else 'one writing'}"
                    f"): the cores run concurrently, so which gets there first decides"
                    f"{'; ' + self.note if self.note else ''}; "
                    f"a nisa.core_barrier between the write and the other core's access orders them")
        if self.kind == "ranks":
            return (f"the ranks touch the same HBM bytes{tensors} with no collective between them ({self.first} on "
                    f"rank 0 / {self.second} on rank 1, {'both writing' if self.dependence == 'WAW' else 'one writing'}"
                    f"): one rank reads a tensor of another's that is being written (a collective whose dsts are its "
                    f"srcs){'; ' + self.note if self.note else ''}; keep a collective's srcs and dsts apart")
        if self.kind == "programs":
            return (f"programs of the SPMD grid touch the same HBM bytes{tensors} ({self.first} / {self.second}, "
                    f"{'both writing' if self.dependence == 'WAW' else 'one writing'}): a grid's instances are "
                    f"distributed to NeuronCores as nl.nc / spmd_dim annotate, or as the compiler decides, so nothing "
                    f"orders one program's accesses before another's{'; ' + self.note if self.note else ''}; give "
                    f"each program its own slice (index by nl.program_id), or one launch per dependent step")
        if self.kind in ("keyword", "broadcast", "generation", "precision", "range", "mask", "unrun",
                         "indices"):  # own words
            return f"{self.first}: {self.note}"
        if self.kind == "uninitialised" and self.dependence == "unwritten":
            return (f"output {' / '.join(self.tensors)} ({self.first}) has bytes no instruction writes: "
                    f"{self.note}; the caller gets whatever the memory held there, not zeros (an nl.ndarray has "
                    f"no values: write every element, or start from nl.zeros)")
        if self.kind == "uninitialised":
            return (f"{self.first} reads bytes of {' / '.join(self.tensors)} that nothing wrote before it: on the "
                    f"device they hold whatever was there, not zeros{'; ' + self.note if self.note else ''} (write "
                    f"them first: a load, nl.zeros, nisa.memset)")
        if self.dependence == "clobber":
            return (f"directly allocated tiles{tensors} overlap while both are live: {self.first} writes bytes that "
                    f"{self.second} reads later; place them apart or add a slot")
        return (f"{self.dependence} race between directly allocated tiles{tensors}: {self.first} / {self.second} "
                f"share bytes while both are live; place them apart or add a slot")

    def to_json(self) -> dict:
        out = {"kind": self.kind, "severity": self.severity, "dependence": self.dependence, "first": self.first,
               "second": self.second, "message": self.describe()}
        if self.loop is not None:
            out["loop"] = self.loop
        if self.distance is not None:
            out["distance"] = self.distance
        if self.tensors:
            out["tensors"] = list(self.tensors)
        if self.note:
            out["note"] = self.note
        return out
