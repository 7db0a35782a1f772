"""``python -m neuronsim.verify.cli``: the command, as the installed ``neuronsim`` launcher runs it."""

from neuronsim.verify.cli import main

main()
