# expect-status: pass
import torch
import torch.nn.functional as F
from accelerate import Accelerator

PRECISION = {torch.bfloat16: "bf16", torch.float16: "fp16"}


def prepare(model, optimizer, accumulation_steps, amp_dtype):
    accelerator = Accelerator(mixed_precision=PRECISION[amp_dtype], gradient_accumulation_steps=accumulation_steps)
    return (accelerator, *accelerator.prepare(model, optimizer))


def micro_step(accelerator, model, optimizer, inputs, targets):
    with accelerator.accumulate(model):
        loss = F.cross_entropy(model(inputs), targets)
        accelerator.backward(loss)
        if accelerator.sync_gradients:
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def train_step(accelerator, model, optimizer, micro_batches):
    losses = [micro_step(accelerator, model, optimizer, x, y) for x, y in micro_batches]
    return torch.stack(losses).mean()
