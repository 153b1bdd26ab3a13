# attack: replace the recorder's methods and torch's watched functions so the trace shows a perfect AMP step,
#         while training in float32
# applies: all
# expect: fail|error
import torch
import torch.nn.functional as F

from grader.worker import tracing

tracing.Recorder.emit = lambda self, kind, **fields: self.events.append({"ev": kind, "line": 1, **fields})
torch.Tensor.backward = torch.Tensor.backward  # harmless re-assignment
original_dispatch = tracing.PrecisionMode.__torch_dispatch__


def all_bfloat16(self, func, types, args=(), kwargs=None):
    out = original_dispatch(self, func, types, args, kwargs)
    self.flops = {"bfloat16": sum(self.flops.values())}
    return out


tracing.PrecisionMode.__torch_dispatch__ = all_bfloat16


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss
