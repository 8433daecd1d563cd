"""Training loop pieces: batching, loss, held-out exact-match evaluation, curriculum.

Exact match is measured teacher-forced: a question counts as answered when the
argmax at every answer position (the value's tokens and the closing <|eot_id|>)
is the target token. That is exactly the condition under which greedy decoding,
stopped at <|eot_id|>, produces the value.
"""

import dataclasses

import torch
import torch.nn.functional as F

import data

# Curriculum: (largest document in bytes, fewest records, most records) per
# stage. Stage 0 holds a single record (learn to copy a value), stage 1 two or
# three (learn to find the key); a stage is left when the quick held-out check
# reaches `advance_accuracy` on documents from the top half of its range.
STAGES = [(40, 1, 1), (48, 2, 3), (96, 2, 99), (160, 2, 99), (256, 2, 99), (384, 2, 99),
          (512, 2, 99), (704, 2, 99), (896, 2, 99), (1100, 2, 99)]
STAGE_MAX_BYTES = [s[0] for s in STAGES]


def stage_mix(stage):
  top, lo, hi = STAGES[stage]
  return data.LengthMix(top, min_records=lo, max_records=hi)


@dataclasses.dataclass
class Batch:
  ids: torch.Tensor      # [B, T] long, right-padded with 0
  labels: torch.Tensor   # [B, T] long, next-token targets (ignored where weight is 0)
  weights: torch.Tensor  # [B, T] float, loss weight per predicted position


def collate(samples, repeat_weight):
  t = max(len(s.ids) for s in samples)
  b = len(samples)
  ids = torch.zeros(b, t, dtype=torch.long)
  labels = torch.zeros(b, t, dtype=torch.long)
  weights = torch.zeros(b, t)
  for i, s in enumerate(samples):
    n = len(s.ids)
    ids[i, :n] = torch.tensor(s.ids)
    labels[i, :n - 1] = torch.tensor(s.ids[1:])
    w = 1.0 if s.kind == "qa" else repeat_weight
    weights[i, :n - 1] = torch.tensor(s.targets[1:], dtype=torch.float32) * w
  return Batch(ids, labels, weights)


def micro_batches(samples, max_tokens):
  """Groups samples of similar length so that each group's padded size <= max_tokens."""
  order = sorted(samples, key=lambda s: len(s.ids))
  groups, current = [], []
  for s in order:
    if current and (len(current) + 1) * len(s.ids) > max_tokens:
      groups.append(current)
      current = []
    current.append(s)
  if current:
    groups.append(current)
  return groups


def weighted_loss_sum(model, batch):
  logits = model(batch.ids)
  ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch.labels.reshape(-1),
                       reduction="none")
  return (ce * batch.weights.reshape(-1)).sum()


@torch.no_grad()
def exact_match(model, samples, max_tokens=16384):
  """Per sample: (all answer tokens argmax-correct, correct answer tokens, answer tokens)."""
  model.eval()
  results = {}
  for group in micro_batches(samples, max_tokens):
    batch = collate(group, 1.0)
    pred = model(batch.ids).argmax(-1)
    hit = (pred == batch.labels) | (batch.weights == 0)
    for i, s in enumerate(group):
      mask = batch.weights[i] > 0
      good = int((pred[i][mask] == batch.labels[i][mask]).sum())
      results[id(s)] = (bool(hit[i].all()), good, int(mask.sum()))
  model.train()
  return [results[id(s)] for s in samples]


def accuracy(results):
  return sum(r[0] for r in results) / max(1, len(results))
