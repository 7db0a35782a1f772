"""NKI kernels under neuronsim's checks: run a kernel as NKI's simulator would
(:mod:`.simulate`), run it with the race report (:mod:`.run`), and the findings only NKI's
programming model gives (:mod:`.findings`: values carried across ``affine_range`` iterations,
``+=`` into SBUF there, directly allocated tiles on the same bytes; :mod:`.lifetimes`)."""
