"""Thirty distinct correct solutions of the grad_scaler lesson, made from independent choices that change the
code's structure (a helper or inline, the loss through a function or a module, keywords or positions, a guard
on the scale, the returned value, the order of definitions), for the similarity tests. A renamed copy renames
every name the learner chose and rewords every comment: what a copy looks like."""

from __future__ import annotations

import itertools
import re

FORWARD = [
    # the loss inside autocast: inline
    "    with torch.autocast(device_type=device_type, dtype=amp_dtype):\n"
    "        outputs = model(inputs)\n        loss = F.cross_entropy(outputs, targets)\n",
    # through a helper function
    "    loss = compute_loss(model, inputs, targets, device_type, amp_dtype)\n",
    # with a loss module made for the step
    "    criterion = torch.nn.CrossEntropyLoss()\n"
    "    with torch.amp.autocast(device_type, amp_dtype):\n        loss = criterion(model(inputs), targets)\n",
]
HELPER = (
    "def compute_loss(model, inputs, targets, device_type, amp_dtype):\n"
    "    with torch.autocast(device_type=device_type, dtype=amp_dtype):\n"
    "        logits = model(inputs)\n"
    "        return F.cross_entropy(logits.float(), targets)\n\n\n"
)
ZERO = [
    "    optimizer.zero_grad()\n",
    "    optimizer.zero_grad(set_to_none=True)\n",
    "    for group in optimizer.param_groups:\n        for p in group['params']:\n            p.grad = None\n",
]
CLIP = [
    "    scaler.unscale_(optimizer)\n    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n",
    "    scaler.unscale_(optimizer=optimizer)\n    params = [p for p in model.parameters() if p.grad is not None]\n"
    "    total = torch.nn.utils.clip_grad_norm_(params, 1.0)\n",
]
STEP = [
    "    scaler.scale(loss).backward()\n",
    "    scaled = scaler.scale(loss)\n    scaled.backward()\n",
]
END = [
    "    scaler.step(optimizer)\n    scaler.update()\n    return loss\n",
    "    scale_before = scaler.get_scale()\n    scaler.step(optimizer)\n    scaler.update()\n"
    "    if scaler.get_scale() < scale_before:\n        pass  # the step was skipped: the scale went down\n"
    "    return loss.detach()\n",
]
HEAD = "import torch\nimport torch.nn.functional as F\n\n\n"


def solutions(n: int = 30) -> list[str]:
    out = []
    for forward, zero, clip, step, end in itertools.product(range(3), range(3), range(2), range(2), range(2)):
        body = ZERO[zero] + FORWARD[forward] + STEP[step] + CLIP[clip] + END[end]
        helper = HELPER if forward == 1 else ""
        out.append(
            HEAD
            + helper
            + "def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):\n"
            + body
        )
        if len(out) == n:
            break
    return out


NAMES = {
    "outputs": "preds",
    "loss": "objective",
    "criterion": "lossfn",
    "compute_loss": "fwd_and_loss",
    "logits": "scores",
    "params": "trainable",
    "total": "norm_value",
    "scaled": "big_loss",
    "scale_before": "old_scale",
    "group": "grp",
    "p": "w",
}


def renamed(code: str) -> str:
    """The same solution under other names and other comments."""
    code = re.sub(r"#.*", "# my own comment", code)
    return re.sub(r"\b(" + "|".join(NAMES) + r")\b", lambda m: NAMES[m.group(1)], code)
