# expect-status: error
# expect-error: exception line=19
# expect-finding: float32_function_in_16bit line=25
import torch
import torch.nn.functional as F

DEVICE_TYPE = "cuda" if torch.cuda.is_available() else "cpu"


class LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return x.mm(weight.t()) + bias

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        return grad.mm(weight), grad.t().mm(x), grad.sum(0)


class RmsNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        rms = x.pow(2).mean(-1, keepdim=True).add(1e-6).rsqrt()
        ctx.save_for_backward(x, rms)
        return x * rms

    @staticmethod
    def backward(ctx, grad):
        x, rms = ctx.saved_tensors
        y = x * rms
        return rms * (grad - y * (grad * y).mean(-1, keepdim=True))


def train_step(encoder, mixer, head, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        h = RmsNormFn.apply(encoder(inputs))
        h = F.gelu(LinearFn.apply(h, mixer.weight, mixer.bias))
        loss = F.cross_entropy(head(h), targets)
    loss.backward()
    optimizer.step()
    return loss
