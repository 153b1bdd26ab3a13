"""Saves of one file, for `grader check --watch`. The watcher (watchfiles) runs
on a thread from before the first grading, so a save made while a grading runs
is not lost: it is graded right after. It watches the file's folder, because
many editors save by writing a new file and renaming it over the old one."""

from __future__ import annotations

import queue
import threading
from pathlib import Path

READY_TIMEOUT_S = 10


class Saves:
    def __init__(self, file: Path):
        self.target = file.resolve()
        self._changes: queue.Queue = queue.Queue()
        self._ready, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._watch, name="watch", daemon=True)

    def _watch(self) -> None:
        from watchfiles import watch

        # yield_on_timeout: the first (empty) yield says the watcher is running
        for changes in watch(
            self.target.parent,
            watch_filter=lambda _change, path: Path(path) == self.target,
            debounce=300,
            step=50,
            rust_timeout=200,
            yield_on_timeout=True,
            stop_event=self._stop,
            raise_interrupt=False,
        ):
            self._ready.set()
            if changes:
                self._changes.put(changes)

    def __enter__(self) -> Saves:
        self._thread.start()
        self._ready.wait(timeout=READY_TIMEOUT_S)
        return self

    def __exit__(self, *exc) -> bool:
        self._stop.set()
        self._thread.join(timeout=2)
        return False

    def next(self) -> bool:
        """Blocks until the file is saved again (several saves count as one); False when it is gone. Polls,
        so Ctrl+C stops it at once."""
        while True:
            try:
                self._changes.get(timeout=0.5)
                break
            except queue.Empty:
                continue
        while not self._changes.empty():
            self._changes.get_nowait()
        return self.target.is_file()
