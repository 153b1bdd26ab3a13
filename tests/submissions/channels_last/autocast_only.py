# expect-status: fail
# expect-finding: model_not_channels_last line=14
# expect-finding: batch_not_channels_last line=14
# expect-check: call_order=pass
# expect-check: coverage=pass
def prepare(model):
    return model


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    import torch
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        logits = model(inputs)
        loss = torch.nn.functional.cross_entropy(logits, targets)
    loss.backward()
    optimizer.step()
    return loss
