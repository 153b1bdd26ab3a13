# expect-status: pass
# expect-no-finding: float32_function_in_16bit
# A LLaMA-style RMSNorm: the mean of squares runs in float32 inside the forward and only the result is cast back
# to the input's 16-bit dtype. Its precision is right; what it returns is 16-bit.
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
        ctx.in_dtype = x.dtype
        x32 = x.float()
        rms = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)
        ctx.save_for_backward(x32, rms)
        return (x32 * rms).to(x.dtype)

    @staticmethod
    @torch.amp.custom_bwd(device_type=DEVICE_TYPE)
    def backward(ctx, grad):
        x32, rms = ctx.saved_tensors
        grad = grad.float()
        y = x32 * rms
        return (rms * (grad - y * (grad * y).mean(-1, keepdim=True))).to(ctx.in_dtype)


def train_step(encoder, mixer, head, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        h = RmsNormFn.apply(encoder(inputs))
        h = F.gelu(LinearFn.apply(h, mixer.weight, mixer.bias))
        loss = F.cross_entropy(head(h), targets)
    loss.backward()
    optimizer.step()
    return loss
