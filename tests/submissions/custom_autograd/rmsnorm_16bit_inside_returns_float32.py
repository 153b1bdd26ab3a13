# expect-status: fail
# expect-finding: float32_function_in_16bit line=32
# The forward's mean of squares runs in bfloat16 under autocast and only its result is cast up to float32: a
# float32 output does not make the reduction float32. The finding names the forward's line, where the fix goes.
import torch
import torch.nn.functional as F

DEVICE_TYPE = "cuda" if torch.cuda.is_available() else "cpu"


class LinearFn(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type=DEVICE_TYPE)
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return x.mm(weight.t()) + bias

    @staticmethod
    @torch.amp.custom_bwd(device_type=DEVICE_TYPE)
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        return grad.mm(weight), grad.t().mm(x), grad.sum(0)


class RmsNormFn(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type=DEVICE_TYPE)
    def forward(ctx, x):
        low = x.to(torch.bfloat16)
        squares = low * low
        rms = torch.rsqrt(
            squares.mean(-1, keepdim=True)
            + 1e-6
        ).float()
        x = x.float()
        ctx.save_for_backward(x, rms)
        return x * rms

    @staticmethod
    @torch.amp.custom_bwd(device_type=DEVICE_TYPE)
    def backward(ctx, grad):
        x, rms = ctx.saved_tensors
        y = x * rms
        return rms * (grad.float() - y * (grad.float() * y).mean(-1, keepdim=True))


def train_step(encoder, mixer, head, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        h = RmsNormFn.apply(encoder(inputs))
        h = F.gelu(LinearFn.apply(h, mixer.weight, mixer.bias))
        loss = F.cross_entropy(head(h), targets)
    loss.backward()
    optimizer.step()
    return loss
