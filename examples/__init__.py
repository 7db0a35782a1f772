"""The README's example programs, kernel and pass, installed as package data: ``neuronsim examples``
writes a copy of them into a folder of the user's (see examples/README.md)."""
