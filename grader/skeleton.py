"""`grader new ID`: a lesson file to start from. Every required field is there,
with text in English, Italian and Indonesian marked TODO, a working FP32
baseline, a reference and a starter for the autocast recipe, a workload sized
to learn within its steps on a slow CPU, and the checks. `grader validate`
refuses it while any TODO is left, and accepts it once the text is written."""

from __future__ import annotations

SKELETON = '''\
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
  # small enough to grade in seconds where bfloat16 is emulated; large enough that the FP32 loss falls by a third
  model: {{in_features: 128, hidden: [256, 256, 256], out_features: 10, activation: gelu}}
  optimizer: {{kind: sgd, lr: 0.02, momentum: 0.9}}
  data: {{batch_size: 128, separation: 1.0}}
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
'''


def skeleton(exercise_id: str, path: str) -> str:
    return SKELETON.format(id=exercise_id, path=path)


def todo_fields(data, where: str = "") -> list[str]:
    """Dotted paths of the text fields that still say TODO."""
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in todo_fields(v, f"{where}.{k}" if where else str(k))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in todo_fields(v, f"{where}[{i}]")]
    return [where] if isinstance(data, str) and data.lstrip().startswith("TODO") else []
