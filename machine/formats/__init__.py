"""The program format ``neuronsim.program/1``: reading and writing it (:mod:`.program_json`), the
validation a loaded program passes (:mod:`.validate`: structure, op rules, placement against
the machine model and the instance stream) and the one-line-per-instruction listing
(:mod:`.listing`); and the I/O every document of neuronsim goes through: one bounded reader of
input documents (:mod:`.inputs`), strict JSON in and out (:mod:`.jsonio`) and atomic output
files (:mod:`.files`).

Builds on the IR, the machine model and the ordering core.
"""
