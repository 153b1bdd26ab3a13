"""`grader new ID`: a lesson file to start from. Every required field is there,
with text in English, Italian and Indonesian marked TODO, a working FP32
baseline, a reference and a starter for the autocast recipe, a workload written
as setup code (models, optimizer and data), sized to learn within its
steps on a slow CPU, and the checks. `grader validate`
refuses it while any TODO is left, and accepts it once the text is written."""

from __future__ import annotations

SKELETON = """\
# A new AMP Dojo lesson. Fill in every TODO (in all three languages), adapt the code, then run
#   grader validate {path}
# The format is documented in docs/authoring.md.
id: {id}
order: 100
title:
  en: "TODO: the lesson's title"
  it: "TODO: il titolo della lezione"
  id: "TODO: judul pelajaran"
summary:
  en: "TODO: one sentence under the title"
  it: "TODO: una frase sotto il titolo"
  id: "TODO: satu kalimat di bawah judul"
lesson:
  en: |
    TODO: the explanation (Markdown).
  it: |
    TODO: la spiegazione (Markdown).
  id: |
    TODO: penjelasan (Markdown).
task:
  en: |
    TODO: what the learner must write in `train_step(model, optimizer, inputs, targets, device_type, amp_dtype)`.
  it: |
    TODO: che cosa deve scrivere chi studia.
  id: |
    TODO: apa yang harus ditulis oleh peserta.
entrypoint:
  name: train_step
  params: [model, optimizer, inputs, targets, device_type, amp_dtype]
starter: |
  import torch
  import torch.nn.functional as F


  def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
      optimizer.zero_grad(set_to_none=True)
      # the learner's work starts here: this starter trains in float32 and must fail a check
      loss = F.cross_entropy(model(inputs), targets)
      loss.backward()
      optimizer.step()
      return loss
reference: |
  import torch
  import torch.nn.functional as F


  def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
      optimizer.zero_grad(set_to_none=True)
      with torch.autocast(device_type=device_type, dtype=amp_dtype):
          loss = F.cross_entropy(model(inputs), targets)
      loss.backward()
      optimizer.step()
      return loss
baseline: |
  import torch.nn.functional as F


  def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
      optimizer.zero_grad(set_to_none=True)
      loss = F.cross_entropy(model(inputs), targets)
      loss.backward()
      optimizer.step()
      return loss
hints:
  - en: "TODO: a first, gentle hint"
    it: "TODO: un primo suggerimento"
    id: "TODO: petunjuk pertama"
quiz:
  - question:
      en: "TODO: a question that checks the lesson's point"
      it: "TODO: una domanda"
      id: "TODO: sebuah pertanyaan"
    choices:
      - en: "TODO: the right answer"
        it: "TODO: la risposta giusta"
        id: "TODO: jawaban yang benar"
      - en: "TODO: a tempting wrong answer"
        it: "TODO: una risposta sbagliata"
        id: "TODO: jawaban yang salah"
    answer: 0
    explanation:
      en: "TODO: why"
      it: "TODO: perché"
      id: "TODO: mengapa"
workload:
  seed: 0
  steps: 8
  # The lesson's own training problem: trusted Python, run from the same seed in the learner's sandbox and in
  # the FP32 baseline's process. build(seed) returns the models, optimizers and constant arguments by name;
  # batch(step, seed) returns this step's data by name. The entrypoint's params may be any of these names,
  # plus scaler, device_type and amp_dtype. Build everything on the CPU: the grader moves it to the device.
  # (Or replace `setup` by a built-in model: `model: {{kind: mlp, ...}}`, `optimizer: ...`, `data: ...`.)
  # Keep it small enough to grade in seconds where bfloat16 is emulated, and large enough that the FP32 loss
  # falls by a third over the steps.
  setup: |
    import torch
    from torch import nn

    IN, HIDDEN, CLASSES, BATCH = 128, 256, 10, 128


    def build(seed):
        model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, HIDDEN), nn.GELU(),
                              nn.Linear(HIDDEN, CLASSES))
        for layer in model[:-1]:
            if isinstance(layer, nn.Linear):
                nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
                nn.init.zeros_(layer.bias)
        return {{"model": model, "optimizer": torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)}}


    def batch(step, seed):
        centres = torch.randn(CLASSES, IN, generator=torch.Generator().manual_seed(seed))
        gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
        targets = torch.randint(0, CLASSES, (BATCH,), generator=gen)
        return {{"inputs": centres[targets] + torch.randn(BATCH, IN, generator=gen), "targets": targets}}
  amp: {{cuda_dtype: bfloat16, cpu_dtype: bfloat16, scaler: false}}
checks:
  - id: call_order
    autocast: true
    scaler: false
  - id: parity
    tolerances:
      bfloat16: {{loss_rtol: 0.02, update_rtol: 0.05}}
      float16: {{loss_rtol: 0.01, update_rtol: 0.03}}
  - id: coverage
    min_fraction: 0.9
# Typical mistakes of this lesson and the verdict each must get (grader validate grades them).
examples: []
"""


def skeleton(exercise_id: str, path: str) -> str:
    return SKELETON.format(id=exercise_id, path=path)
