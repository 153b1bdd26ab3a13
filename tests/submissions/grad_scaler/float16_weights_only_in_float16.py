# expect-status: fail
# expect-check: call_order=fail
# expect-finding: master_weights_16bit
# expect-message: float16 pass
# expect-note: float16_pass.stopped line=21
# expect-no-note: not_exercised.if
# Casts the model's weights to float16 when the lesson runs in float16 (CUDA here): the optimizer then updates
# float16 weights, whose small updates round away, and the GradScaler refuses float16 gradients. A CPU grades in
# bfloat16 and keeps float32 weights; the float16 pass on the CPU runs the cast.
import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    if amp_dtype == torch.float16:
        model.half()
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = F.cross_entropy(model(inputs.to(amp_dtype)), targets)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss
