# expect-status: fail
# expect-finding: accumulate_missing line=22
# expect-no-finding: step_every_micro_batch
# expect-message: the optimizer stepped once, as it should
# Without accelerator.accumulate(model) but with one step after the loop: it did not step on every micro-batch.
import torch
import torch.nn.functional as F
from accelerate import Accelerator


def prepare(model, optimizer, accumulation_steps, amp_dtype):
    precision = "bf16" if amp_dtype == torch.bfloat16 else "fp16"
    accelerator = Accelerator(mixed_precision=precision, gradient_accumulation_steps=accumulation_steps)
    model, optimizer = accelerator.prepare(model, optimizer)
    return accelerator, model, optimizer


def train_step(accelerator, model, optimizer, micro_batches):
    total = 0.0
    for inputs, targets in micro_batches:
        loss = F.cross_entropy(model(inputs), targets)
        accelerator.backward(loss)
        total += loss.item() / len(micro_batches)
    accelerator.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    optimizer.zero_grad()
    return total
