"""What the trace records of learning-rate schedulers, installed by the Recorder next to its AMP wrappers
(grader/worker/tracing.py): every `lr_scheduler.step()` with the learning rate it set and how many times its
optimizer's step() had really run by then. A GradScaler that finds inf/NaN gradients skips optimizer.step(); a
scheduler stepped on such a step advances the schedule for an update that never happened, which a lesson check
sees as a scheduler step whose `optimizer_steps` did not grow."""

from __future__ import annotations

import torch

from grader.worker.watching import watching


def scheduler_classes() -> list[type]:
    """LRScheduler and every scheduler of torch.optim.lr_scheduler with a step() of its own (SequentialLR,
    ReduceLROnPlateau, ...): the methods a learner's `scheduler.step()` can reach first."""
    from torch.optim import lr_scheduler

    base = lr_scheduler.LRScheduler
    return [base] + [
        cls
        for cls in vars(lr_scheduler).values()
        if isinstance(cls, type) and issubclass(cls, base) and cls is not base and "step" in vars(cls)
    ]


def install(rec) -> list[tuple[object, str]]:
    """Wraps the schedulers' step(); returns the (owner, attribute) pairs it replaced, for the tamper check."""
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    steps_run: dict[int, int] = {}  # id(optimizer) -> times its step() ran to the end (a skipped step never starts)
    numbers: dict[int, int] = {}  # id(scheduler) -> 0, 1, ... in order of first step
    depth = [0]  # a scheduler stepping the schedulers it chains (SequentialLR) is one step, not several

    def counted(optimizer, args, kwargs):
        steps_run[id(optimizer)] = steps_run.get(id(optimizer), 0) + 1

    def own_count(optimizer) -> bool:  # a copy of an optimizer (copy.deepcopy) copies its hooks too
        return counted in getattr(optimizer, "_optimizer_step_post_hooks", {}).values()

    def counted_last(optimizer, args, kwargs):
        if not own_count(optimizer):
            counted(optimizer, args, kwargs)

    def count_first(optimizer, args, kwargs):
        """An optimizer runs its own post hooks before the global ones: a learner's hook that steps the scheduler
        once the step is done (`register_step_post_hook`) would see it uncounted. The count goes first among the
        optimizer's own hooks instead, where PyTorch keeps them in order (the global hook counts elsewhere)."""
        hooks = getattr(optimizer, "_optimizer_step_post_hooks", None)
        if not hasattr(hooks, "move_to_end") or own_count(optimizer):
            return
        handle = optimizer.register_step_post_hook(counted)
        hooks.move_to_end(handle.id, last=False)

    register_optimizer_step_pre_hook(count_first)
    register_optimizer_step_post_hook(counted_last)

    def record(scheduler):
        optimizer = scheduler.optimizer
        while isinstance(getattr(optimizer, "optimizer", None), torch.optim.Optimizer):  # Accelerate's wrapper
            optimizer = optimizer.optimizer
        groups = getattr(optimizer, "param_groups", None) or [{}]
        lr = groups[0].get("lr")
        rec.emit(
            "lr_scheduler_step",
            scheduler=numbers.setdefault(id(scheduler), len(numbers)),
            optimizer=rec.optimizer_index(optimizer),
            last_epoch=int(scheduler.last_epoch) if isinstance(scheduler.last_epoch, int) else None,
            optimizer_steps=steps_run.get(id(optimizer), 0),
            lr=float(lr) if isinstance(lr, (int, float, torch.Tensor)) else None,
        )

    replaced = []
    for cls in scheduler_classes():
        original = vars(cls)["step"]

        def make(original):
            @watching(original)
            def step(self_, *args, **kwargs):
                # the constructor's own first step (LRScheduler._initial_step) is no call of the learner's
                outer = depth[0] == 0 and not getattr(self_, "_is_initial", False)
                depth[0] += 1
                try:
                    result = original(self_, *args, **kwargs)
                finally:
                    depth[0] -= 1
                if outer and rec.active:
                    record(self_)
                return result

            return step

        cls.step = make(original)
        replaced.append((cls, "step"))
    initial = getattr(torch.optim.lr_scheduler.LRScheduler, "_initial_step", None)
    if initial is not None:  # older PyTorch has no _is_initial flag: the constructor's step is nested here instead

        @watching(initial)
        def _initial_step(self_, *args, **kwargs):
            depth[0] += 1
            try:
                return initial(self_, *args, **kwargs)
            finally:
                depth[0] -= 1

        torch.optim.lr_scheduler.LRScheduler._initial_step = _initial_step
        replaced.append((torch.optim.lr_scheduler.LRScheduler, "_initial_step"))
    return replaced
