"""The application's shared parts, apart from the checkers: what both front ends use (the
``neuronsim`` command, :mod:`neuronsim.verify.cli`, and the kernel author's API,
:mod:`neuronsim.nki`, with :mod:`neuronsim.verify.nki`'s end-to-end run).

* :mod:`.scenario_runs`: find a scenario, run it end to end (compile, race check, simulate,
  compare with its numpy reference) and rewrite the shipped files;
* :mod:`.html_report`: the one-file HTML report and its drawings (templates in ``templates/``);
* :mod:`.drawings`: a simulated run's and a task run's timeline as an image (matplotlib);
* :mod:`.progress`: progress bars on a terminal, summary lines in a log;
* :mod:`.console`: the console tables are printed to, wide enough never to cut a number;
* :mod:`.host`: what the host has (memory, its control group's limit, the address space) and
  figures as people read them, for the commands' size guard.

The checkers (:mod:`neuronsim.verify.racecheck`, :mod:`~neuronsim.verify.tracecheck`, sync
counts, ...) stay one room down and import nothing from here.
"""
