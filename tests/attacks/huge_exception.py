# attack: raise an exception whose message is 10 MB (and claims a line far outside the file), hoping the stored
#         result grows without bound
# applies: all
# expect: error
def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    raise RuntimeError("x" * 10_000_000)
