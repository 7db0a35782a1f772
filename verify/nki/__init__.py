"""NKI kernels under neuronsim's checks: run a kernel as NKI's simulator would
(:mod:`.simulate`), run it with the race report (:mod:`.run`), and the findings only NKI's
programming model gives (:mod:`.findings`: values carried across ``affine_range`` iterations,
``+=`` into SBUF there, directly allocated tiles on the same bytes; :mod:`.lifetimes`)."""

from neuronsim.verify.nki import probe as _probe  # noqa: E402,F401  (the frontend reads device values through it)
