"""Building the IR's records: ``quick_init`` against the ``__init__`` dataclasses generates.

An unrolled kernel builds its records by the hundred thousand (an ``Access`` per operand, an
``Instruction``, a ``Tensor`` per tile), and a frozen dataclass's generated ``__init__`` stores
each field through ``object.__setattr__`` by name (docs/performance-notes.md section 2.17).  This
times building the same ``Access`` and ``Instruction`` values through the installed classes
(``quick_init``) and through the same class declarations left to ``dataclasses`` alone (the
floor: what the records cost without it), in one process, best of ``--repeat`` rounds, and
checks that both build equal values.

Usage::

    .venv/bin/python bench/bench_records.py            # 200,000 of each, best of 5
    .venv/bin/python bench/bench_records.py --count 1000000
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from neuronsim.machine.ir.program import Access, Instruction


def _plain(cls: type) -> type:
    """The same frozen, slotted dataclass, its ``__init__`` the one dataclasses generates."""
    fields = [(f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory,
                                                  hash=f.hash, compare=f.compare))
              for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(f"Plain{cls.__name__}", fields, frozen=True, slots=True)


def _time(build, count: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for i in range(count):
            build(i)
        best = min(best, time.process_time() - start)
    return best / count * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200_000, help="records built per round")
    parser.add_argument("--repeat", type=int, default=5, help="rounds; the best is shown")
    args = parser.parse_args()
    cases = {
        "Access (7 fields)": (Access, lambda cls: lambda i: cls("t", (0, 128, 1), i, ((1, 512),))),
        "Instruction (9 fields)": (Instruction, lambda cls: lambda i: cls(f"i{i & 7}", "pe", "matmul", (), ())),
    }
    print(f"{args.count:,} records a round, best of {args.repeat} (CPU ns a record)")
    for name, (cls, maker) in cases.items():
        plain = _plain(cls)
        quick, generated = maker(cls), maker(plain)
        same = all(getattr(quick(3), f.name) == getattr(generated(3), f.name) for f in dataclasses.fields(cls))
        fast, floor = _time(quick, args.count, args.repeat), _time(generated, args.count, args.repeat)
        print(f"  {name:24s} quick_init {fast:7.0f}   dataclasses {floor:7.0f}   ratio {fast / floor:.2f}"
              f"   same values: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
