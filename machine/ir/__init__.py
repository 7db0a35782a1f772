"""The program IR and what it is written with: tensors, accesses, instructions, loops and
programs (:mod:`.program`), dependence edges (:mod:`.edges`), located errors (:mod:`.errors`),
element types (:mod:`.dtypes`), the format's ``x-`` extensions (:mod:`.extensions`) and the
collector guard (:mod:`.collector`).  Reading and writing files is not here: that is
:mod:`neuronsim.machine.formats`.

The bottom room: it imports nothing else of neuronsim's, so every other room can build on it.
"""
