"""The ``neuronsim`` command line: the group and its entry point (:mod:`.app`), one small
module per command beside them (:mod:`.check`, :mod:`.compile`, ...), their shared helpers
(:mod:`.common`: reading programs, exit statuses, JSON output) and the task-program paths of the
commands that take both formats (:mod:`.task_programs`)."""

from neuronsim.verify.cli.app import cli, emit_json, json_option, main, program_argument, run_command, UsageFailure

__all__ = ["main", "cli", "run_command", "emit_json", "program_argument", "json_option", "UsageFailure"]
