"""Every lesson's trusted runs, computed in the background when a grading worker
starts (WARM_AT_START), below the learners' gradings.

A learner's grading computes whatever trusted runs its lesson still lacks itself,
at the learners' priority (runner.run), so the class's first submission of a
lesson waits for that lesson's runs only, provided the warm stays out of its way.
It does, twice over:

- its sandboxes run at the lowest CPU priority there is (Launcher.background:
  SCHED_IDLE and nice 19, an idle cgroup, Docker's least CPU weight), started
  cold beside the warm pool, whose blanks are kept for learners;
- it gives way altogether while a grading holds the device (exclusive.in_use, any
  worker process of the host) or learners wait in the queue: no lesson starts
  then, and the lesson in progress is cancelled within POLL_S. Its finished roles
  are kept (each is stored as it ends); the rest is computed again once the
  device has been free for QUIET_S. Timed rounds thus never share the device with
  a warm, even on a GPU, where a CPU priority means nothing.

No lock or claim per lesson: a grading never waits for the warm (that would hand a
learner's wait to the lowest priority), and the two never compute one lesson side
by side for longer than POLL_S. Where two computations of one run meet anyway
(two first gradings of a lesson at once), each stores the whole run atomically
under the same key, and either is the trusted run."""

from __future__ import annotations

import logging
import threading
import time

from grader.judge.trusted_runs import warm
from grader.lesson.schema import Exercise
from grader.sandboxes import exclusive

log = logging.getLogger("grader.judge.warming")

POLL_S = 0.25  # how soon a grading that starts stops the warm
QUIET_S = 1.0  # how long the device must have been free before the warm starts a lesson (the gap between two
# queued gradings is shorter)


class BackgroundWarm(threading.Thread):
    """Warms `exercises` one after another on `device`; `learners_waiting()` says whether submissions wait in
    the queue (the web app's; none by default). `done` maps each lesson warmed to the roles it computed,
    `failed` each lesson that could not be warmed to why (its first grading computes them, and says why)."""

    def __init__(
        self,
        exercises: list[Exercise],
        device: str,
        launcher,
        learners_waiting=lambda: False,
        compute=warm,
        poll_s: float = POLL_S,
        quiet_s: float = QUIET_S,
    ):
        super().__init__(name="warm-trusted-runs", daemon=True)
        self.exercises, self.device, self.launcher = list(exercises), device, launcher.background()
        self.learners_waiting, self.compute = learners_waiting, compute
        self.poll_s, self.quiet_s = poll_s, quiet_s
        self.done: dict[str, list[str]] = {}
        self.failed: dict[str, str] = {}
        self.gave_way = 0  # lessons cancelled for a learner's grading (and started again later)

    def busy(self) -> bool:
        """A grading on the device, or learners in the queue. A probe that fails counts as neither: the warm
        would otherwise never run (and gradings meet the same trouble themselves)."""
        try:
            if exclusive.in_use(self.device):
                return True
        except Exception:  # an unusable lock folder: gradings will say why
            log.debug("the device lock of %s could not be probed", self.device, exc_info=True)
        try:
            return bool(self.learners_waiting())
        except Exception:  # a queue hiccup: asked again at the next poll
            log.debug("the queue could not be asked for waiting submissions", exc_info=True)
            return False

    def run(self) -> None:
        pending = list(self.exercises)
        while pending:
            self._until_quiet()
            exercise = pending[0]
            cancel, stop = threading.Event(), threading.Event()
            watch = threading.Thread(target=self._watch, args=(cancel, stop), daemon=True, name="warm-watch")
            watch.start()
            try:
                computed = self.compute(exercise, self.device, self.launcher, cancel)
            except Exception as exc:  # noqa: BLE001 - one lesson's trouble never stops the others' warm
                if cancel.is_set():
                    self.gave_way += 1
                    log.debug("warming %s gave way to a learner's grading", exercise.id)
                    continue
                self.failed[exercise.id] = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
                log.warning("the trusted runs of %s could not be computed: %s", exercise.id, self.failed[exercise.id])
            else:
                self.done[exercise.id] = computed
                if computed:
                    log.info("trusted runs of %s computed: %s", exercise.id, ", ".join(computed))
            finally:
                stop.set()
                watch.join()
            pending.pop(0)

    def _watch(self, cancel: threading.Event, stop: threading.Event) -> None:
        while not stop.wait(self.poll_s):
            if self.busy():
                cancel.set()
                return

    def _until_quiet(self) -> None:
        quiet_since = time.monotonic()
        while True:
            if self.busy():
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= self.quiet_s:
                return
            time.sleep(self.poll_s)
