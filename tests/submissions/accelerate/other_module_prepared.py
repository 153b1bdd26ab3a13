# expect-status: fail
# expect-finding: model_not_prepared line=13
# expect-message: accelerator.prepare got a module that is not the lesson's model
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from torch import nn


def prepare(model, optimizer, accumulation_steps, amp_dtype):
    accelerator = Accelerator(mixed_precision="bf16" if amp_dtype == torch.bfloat16 else "fp16",
                              gradient_accumulation_steps=accumulation_steps)
    _, optimizer = accelerator.prepare(nn.Linear(1, 1), optimizer)
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
