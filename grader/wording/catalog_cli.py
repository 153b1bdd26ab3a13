"""The `grader` command's own errors (not a learner's mistake: those are findings), worded in the learner's
language like everything else it prints: a mistyped lesson id is answered with the nearest one."""

CLI = {
    "cli.error": "Error: {message}",
    "cli.exists": "{path} exists; use --force to overwrite it",
    "cli.no_file": "file {path} does not exist",
    "cli.not_a_file": "{path} is a folder, not a file",
    "cli.no_exercise": "no exercise {id!r}; known: {known}",
    "cli.no_exercise_near": "no exercise {id!r}: did you mean {near!r}? Known: {known}",
}
