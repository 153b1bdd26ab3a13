"""One module per check. Each exposes `check(spec, ...) -> CheckResult` and
decides from evidence the parent process gathered."""
