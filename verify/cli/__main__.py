"""``python -m neuronsim.verify.cli``: the command, as the installed ``neuronsim`` launcher runs it."""

from neuronsim.verify.cli import main

if __name__ == "__main__":  # importing the module (the doctest sweep does) runs nothing
    main()
