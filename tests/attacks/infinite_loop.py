# attack: loop forever inside the training step
# applies: all
# expect: error
def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    n = 0
    while True:
        n += 1
