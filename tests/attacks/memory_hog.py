# attack: allocate memory without bound
# applies: all
# expect: error
def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    hoard = []
    while True:
        hoard.append(bytearray(64 * 1024 * 1024))
