# expect-status: fail
# expect-finding: accelerator_unscale_twice line=25
# Two clips before one step: each unscales first, which raises with float16; with bfloat16 the trace names it.
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
        with accelerator.accumulate(model):
            loss = F.cross_entropy(model(inputs), targets)
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), max_norm=1.0)
                params = [p for p in model.parameters() if p.ndim > 1]
                accelerator.clip_grad_norm_(params, max_norm=0.5)
            optimizer.step()
            optimizer.zero_grad()
        total += loss.item() / len(micro_batches)
    return total
