"""The task level of ``verify``: the race check of unrolled task graphs (:mod:`.check`), counts
before and after the task passes (:mod:`.counts`), task scenarios (:mod:`.scenarios`), the
fuzzer and its strategies (:mod:`.fuzz`, :mod:`.strategies`) and the commands' task-program
paths (:mod:`.commands`)."""
