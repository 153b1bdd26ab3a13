# expect-status: fail
# expect-check: parity=fail
# expect-check: call_order=pass
# expect-message: look first at the loss the step returns
# expect-no-message: In this lesson the update differs
import torch
import torch.nn.functional as F
from accelerate import Accelerator


def prepare(model, optimizer, accumulation_steps, amp_dtype):
    precision = "bf16" if amp_dtype == torch.bfloat16 else "fp16"
    accelerator = Accelerator(mixed_precision=precision, gradient_accumulation_steps=accumulation_steps)
    model, optimizer = accelerator.prepare(model, optimizer)
    return accelerator, model, optimizer


def train_step(accelerator, model, optimizer, micro_batches):
    for inputs, targets in micro_batches:
        with accelerator.accumulate(model):
            loss = F.cross_entropy(model(inputs), targets)
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            optimizer.zero_grad()
    return loss.item()  # the last micro-batch's loss, not the mean of all of them
