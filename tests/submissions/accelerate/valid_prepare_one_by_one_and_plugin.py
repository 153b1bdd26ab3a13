# expect-status: pass
# expect-no-finding: model_not_prepared
# expect-no-finding: optimizer_not_prepared
# expect-no-finding: accumulation_steps_mismatch
# Accelerate's other public spellings: a GradientAccumulationPlugin instead of gradient_accumulation_steps, and
# prepare_model / prepare_optimizer instead of one prepare(model, optimizer).
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import GradientAccumulationPlugin


def prepare(model, optimizer, accumulation_steps, amp_dtype):
    accelerator = Accelerator(mixed_precision="bf16" if amp_dtype == torch.bfloat16 else "fp16",
                              gradient_accumulation_plugin=GradientAccumulationPlugin(num_steps=accumulation_steps))
    model = accelerator.prepare_model(model)
    optimizer = accelerator.prepare_optimizer(optimizer)
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
