# expect-status: fail
# expect-finding: accelerator_without_mixed_precision line=10
# expect-check: coverage=fail
import torch
import torch.nn.functional as F
from accelerate import Accelerator


def prepare(model, optimizer, accumulation_steps, amp_dtype):
    accelerator = Accelerator(gradient_accumulation_steps=accumulation_steps)
    model, optimizer = accelerator.prepare(model, optimizer)
    return accelerator, model, optimizer


def train_step(accelerator, model, optimizer, micro_batches):
    total = 0.0
    for inputs, targets in micro_batches:
        with accelerator.accumulate(model):
            loss = F.cross_entropy(model(inputs), targets)
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            optimizer.zero_grad()
        total += loss.item() / len(micro_batches)
    return total
