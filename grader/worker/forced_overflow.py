"""The overflow the grader forces on a chosen step, inside the worker. Runs with a GradScaler get an inf in every
parameter's gradient, as a float16 backward that overflows would give; the FP32 baseline, which has no scaler,
runs the step and is then put back as a skipped step leaves it. "As a skipped step leaves it" includes the
learning-rate schedule: a right solution does not step its scheduler when the scaler skipped the optimizer step,
so the baseline's plain `scheduler.step()` is undone here, and its public code needs no skip logic."""

from __future__ import annotations

import copy

import torch


def poisoned(params, step: int, optimizers=()) -> list:
    """The parameters whose gradients overflow on a forced step: one of each optimizer's (a GradScaler skips
    an optimizer's step only for an inf among its own gradients, so each must get one for every step to be
    skipped), or one of all where the learner builds the optimizers. One, as an overflow inside a layer's
    weight gradient goes no further, and another from step to step, so that only a step that asks the scaler
    (or looks at every gradient) sees each overflow; a test of the head's gradient alone misses some. The same
    in every run of a lesson: it depends on the step and the parameters' order only."""
    groups = [[p for g in o.param_groups for p in g["params"]] for o in optimizers if o is not None] or [params]
    chosen = []
    for group in groups:
        trainable = [p for p in group if p.requires_grad]
        if trainable and not any(trainable[(step * 7919) % len(trainable)] is c for c in chosen):
            chosen.append(trainable[(step * 7919) % len(trainable)])
    return chosen


def poison_hooks(params, step: int, optimizers=()) -> list:
    """Hooks that put an inf into some gradients during one step (`poisoned`); the caller removes them after."""

    def poison(grad):
        grad = grad.clone()
        grad[(0,) * grad.dim()] = float("inf")  # by index, not view(-1): a channels_last gradient has no flat view
        return grad

    return [p.register_hook(poison) for p in poisoned(params, step, optimizers)]


def schedulers_among(*groups) -> list:
    """The learning-rate schedulers among the values of some dicts (setup's constants, what prepare returned)."""
    from torch.optim.lr_scheduler import LRScheduler, ReduceLROnPlateau

    kinds = (LRScheduler, ReduceLROnPlateau)
    found = []
    for values in groups:
        for value in values.values():
            if isinstance(value, kinds) and all(value is not s for s in found):
                found.append(value)
    return found


class Skipped:
    """Weights, optimizer state (per parameter, and the param groups' hyperparameters, which a scheduler sets) and
    every scheduler's state as they were before a step, to be put back. Buffers, such as running statistics, keep
    what the step's forward did: a skipped step still ran it."""

    def __init__(self, params, optimizers, schedulers=()):
        self.params = [(p, p.detach().clone()) for p in params]
        self.optimizers = [
            (
                o,
                {p: copy.deepcopy(state) for p, state in o.state.items()},
                [copy.deepcopy({k: v for k, v in g.items() if k != "params"}) for g in o.param_groups],
            )
            for o in optimizers
        ]
        self.schedulers = [(s, copy.deepcopy(s.state_dict())) for s in schedulers]

    def restore(self):
        with torch.no_grad():
            for p, value in self.params:
                p.copy_(value)
                p.grad = None
        for optimizer, state, groups in self.optimizers:
            optimizer.state.clear()
            optimizer.state.update(state)
            for group, settings in zip(optimizer.param_groups, groups):
                group.update(copy.deepcopy(settings))
        for scheduler, state in self.schedulers:
            scheduler.load_state_dict(copy.deepcopy(state))
