"""Where workers run: the launchers (local, bubblewrap, Docker), their limits,
the warm pool, cgroups, and the device locks that keep timed rounds exclusive.
A launcher starts `python -m grader.worker` with the in-sandbox package only."""
