# expect-status: pass
import torch
import torch.nn.functional as F
from torch.amp import custom_bwd, custom_fwd

DEVICE_TYPE = torch.device("cuda" if torch.cuda.is_available() else "cpu").type


class LinearFn(torch.autograd.Function):
    @staticmethod
    @custom_fwd(device_type=DEVICE_TYPE)
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return torch.addmm(bias, x, weight.t())

    @staticmethod
    @custom_bwd(device_type=DEVICE_TYPE)
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        return grad @ weight, grad.t() @ x, grad.sum(0)


class RmsNormFn(torch.autograd.Function):
    @staticmethod
    @custom_fwd(device_type=DEVICE_TYPE, cast_inputs=torch.float32)
    def forward(ctx, x):
        rms = torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + 1e-6)
        ctx.save_for_backward(x, rms)
        return x * rms

    @staticmethod
    @custom_bwd(device_type=DEVICE_TYPE)
    def backward(ctx, grad):
        x, rms = ctx.saved_tensors
        y = x * rms
        return rms * (grad - y * (grad * y).mean(-1, keepdim=True))


def rms_norm(x):
    return RmsNormFn.apply(x)


def linear(x, layer):
    return LinearFn.apply(x, layer.weight, layer.bias)


def train_step(encoder, mixer, head, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        logits = head(F.gelu(linear(rms_norm(encoder(inputs)), mixer)))
        loss = F.cross_entropy(logits, targets)
    loss.backward()
    optimizer.step()
    return loss.detach()
