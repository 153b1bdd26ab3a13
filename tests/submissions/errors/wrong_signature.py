# expect-status: error
# expect-error: signature line=3
def train_step(model, optimizer, inputs):
    return 0
