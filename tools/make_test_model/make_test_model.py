#!/usr/bin/python3
"""Trains kvd's bundled test model and writes it as a Hugging Face model directory.

A ~1M-parameter LLaMA-architecture GQA model learns, on the CPU, to answer
questions about synthetic key-value documents and to repeat a document: the
tasks that make KV-cache compression measurable. The tool trains its own
byte-level BPE tokenizer, trains the model under a length curriculum, measures
held-out exact match, and writes config, weights, tokenizer files, reference
fixtures for the C++ tests and the models/README.md that reports the figures.

  /usr/bin/python3 tools/make_test_model/make_test_model.py --seed 1234 --out models/kvd-tiny
  /usr/bin/python3 tools/make_test_model/make_test_model.py --quick --out /tmp/kvd-tiny-quick
"""

import argparse
import copy
import json
import math
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# Debian's torch calls a threaded OpenBLAS; its threads on top of torch's own
# oversubscribe the cores and halve the speed. Must be set before torch loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import bpe  # noqa: E402
import data  # noqa: E402
import export  # noqa: E402
import model as model_lib  # noqa: E402
import report  # noqa: E402
import train  # noqa: E402


def parse_args(argv=None):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("--seed", type=int, default=1234)
  p.add_argument("--out", default="models/kvd-tiny", help="model directory to write")
  p.add_argument("--readme", default=None,
                 help="README to write (default: next to --out, or inside it with --quick)")
  p.add_argument("--max-minutes", type=float, default=45.0,
                 help="wall-clock budget for the whole run, training stops early enough "
                 "to evaluate and export within it")
  p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: none)")
  p.add_argument("--quick", action="store_true",
                 help="a few seconds of training on little data; same complete output")
  p.add_argument("--vocab-size", type=int, default=512, help="total, special tokens included")
  p.add_argument("--intermediate-size", type=int, default=384)
  p.add_argument("--lr", type=float, default=5e-4,
                 help="peak learning rate; at 3e-3 the model never learned to copy a value "
                 "(1,700 steps), at 5e-4 it did within 300")
  p.add_argument("--batch-tokens", type=int, default=4096,
                 help="tokens per optimizer step, at most")
  p.add_argument("--batch-samples", type=int, default=32,
                 help="samples per optimizer step, at most (bounds the early, short stages)")
  p.add_argument("--micro-tokens", type=int, default=8192, help="padded tokens per forward")
  p.add_argument("--repeat-fraction", type=float, default=0.25,
                 help="share of reconstruction samples")
  p.add_argument("--repeat-weight", type=float, default=0.5,
                 help="loss weight of a reconstruction token relative to an answer token")
  p.add_argument("--key-length", type=int, default=data.KEY_LENGTH, help="digits per key")
  p.add_argument("--max-questions", type=int, default=8, help="QA turns per document, at most")
  p.add_argument("--advance-accuracy", type=float, default=0.9)
  p.add_argument("--check-every", type=int, default=50, help="steps between curriculum checks")
  p.add_argument("--select-every", type=int, default=200,
                 help="steps between evaluations that pick the best weights")
  p.add_argument("--checkpoint-dir", default=None,
                 help="default: /tmp/<name of --out>-train")
  p.add_argument("--resume", action="store_true", help="continue from the checkpoint")
  p.add_argument("--threads", type=int, default=1,
                 help="torch threads; 1 measured faster than 2 whenever the cores are shared")
  p.add_argument("--test-docs", type=int, default=300,
                 help="held-out documents of 300-1000 bytes in the final evaluation")
  return p.parse_args(argv)


def log(msg):
  print(time.strftime("%H:%M:%S ") + msg, flush=True)


def build_tokenizer(args):
  rng = np.random.default_rng([args.seed, 0])
  texts = data.bpe_training_texts(rng, 2000 if args.quick else 20000)
  merges = bpe.train_bpe(texts, args.vocab_size - 256 - len(bpe.SPECIAL_TOKENS),
                         skip_piece=data.skip_in_bpe)
  return bpe.Tokenizer(merges)


class Trainer:
  """Owns the model, optimizer, curriculum state and the data streams."""

  def __init__(self, args, tok):
    self.args = args
    self.tok = tok
    self.builder = data.SampleBuilder(tok)
    self.cfg = model_lib.ModelConfig(vocab_size=tok.vocab_size,
                                     intermediate_size=args.intermediate_size)
    torch.manual_seed(args.seed)
    self.model = model_lib.Llama(self.cfg)
    decay = [p for n, p in self.model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in self.model.named_parameters() if p.dim() < 2]
    self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                  {"params": no_decay, "weight_decay": 0.0}],
                                 lr=args.lr, betas=(0.9, 0.98), eps=1e-8)
    self.train_rng = np.random.default_rng([args.seed, 1])
    self.check_rng = np.random.default_rng([args.seed, 3])
    select_rng = np.random.default_rng([args.seed, 2])
    n = 16 if args.quick else 60
    self.select_set = [s for _, s in data.make_eval_set(select_rng, self.builder, 300, 1000, n, 3)]
    self.state = {"step": 0, "stage": 0, "elapsed": 0.0, "best_accuracy": -1.0,
                  "best_step": -1, "best_stage": 0, "history": [], "stage_steps": {}}
    self.best_weights = None
    self.ckpt_dir = args.checkpoint_dir or os.path.join(
        "/tmp", os.path.basename(os.path.normpath(args.out)) + "-train")

  # --- checkpoints -----------------------------------------------------------------

  def checkpoint_path(self):
    return os.path.join(self.ckpt_dir, "checkpoint.pt")

  def save_checkpoint(self):
    os.makedirs(self.ckpt_dir, exist_ok=True)
    blob = {
        "model": self.model.state_dict(),
        "opt": self.opt.state_dict(),
        "state": self.state,
        "best_weights": self.best_weights,
        "train_rng": self.train_rng.bit_generator.state,
        "check_rng": self.check_rng.bit_generator.state,
        "torch_rng": torch.get_rng_state(),
        "merges": self.tok.merges,
    }
    tmp = self.checkpoint_path() + ".tmp"
    torch.save(blob, tmp)
    os.replace(tmp, self.checkpoint_path())

  def load_checkpoint(self):
    blob = torch.load(self.checkpoint_path())
    if [tuple(m) for m in blob["merges"]] != self.tok.merges:
      raise SystemExit("checkpoint was trained with another tokenizer (seed or vocab differ)")
    self.model.load_state_dict(blob["model"])
    self.opt.load_state_dict(blob["opt"])
    self.state = blob["state"]
    self.best_weights = blob["best_weights"]
    self.train_rng.bit_generator.state = blob["train_rng"]
    self.check_rng.bit_generator.state = blob["check_rng"]
    torch.set_rng_state(blob["torch_rng"])

  # --- schedule ----------------------------------------------------------------------

  def learning_rate(self, progress):
    """Linear warmup, constant, then cosine decay to 10% over the last 20% of the budget."""
    args, step = self.args, self.state["step"]
    lr = args.lr * min(1.0, (step + 1) / 100)
    if progress > 0.8:
      f = min(1.0, (progress - 0.8) / 0.2)
      lr *= 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * f))
    return lr

  # --- one step ----------------------------------------------------------------------

  def train_step(self, lr):
    args = self.args
    mix = train.stage_mix(self.state["stage"])
    samples, tokens = [], 0
    while tokens < args.batch_tokens and len(samples) < args.batch_samples:
      s = data.make_training_sample(self.train_rng, self.builder, mix, args.repeat_fraction,
                                    args.max_questions)
      samples.append(s)
      tokens += len(s.ids)
    for g in self.opt.param_groups:
      g["lr"] = lr
    self.opt.zero_grad(set_to_none=True)
    groups = train.micro_batches(samples, args.micro_tokens)
    batches = [train.collate(g, args.repeat_weight) for g in groups]
    total_weight = sum(float(b.weights.sum()) for b in batches)
    loss_total = 0.0
    for b in batches:
      loss = train.weighted_loss_sum(self.model, b) / total_weight
      loss.backward()
      loss_total += float(loss)
    torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
    self.opt.step()
    self.state["step"] += 1
    return loss_total, tokens

  def curriculum_check(self):
    """Quick held-out check at the current stage; advances the stage when it passes."""
    stage = self.state["stage"]
    top = train.STAGE_MAX_BYTES[stage]
    n_docs = 8 if self.args.quick else 24
    mix = train.stage_mix(stage)
    evals = data.make_eval_set(self.check_rng, self.builder, max(24, top // 2), top, n_docs, 3,
                               mix.min_records, mix.max_records)
    acc = train.accuracy(train.exact_match(self.model, [s for _, s in evals]))
    advanced = False
    if acc >= self.args.advance_accuracy and stage + 1 < len(train.STAGE_MAX_BYTES):
      self.state["stage"] = stage + 1
      self.state["stage_steps"][str(stage + 1)] = self.state["step"]
      advanced = True
    return acc, advanced

  def select_check(self):
    acc = train.accuracy(train.exact_match(self.model, self.select_set))
    if acc > self.state["best_accuracy"]:
      self.state["best_accuracy"] = acc
      self.state["best_step"] = self.state["step"]
      self.state["best_stage"] = self.state["stage"]
      self.best_weights = copy.deepcopy(self.model.state_dict())
      # A crash from here on still leaves a usable model directory.
      export.write_model_files(self.args.out, self.model, self.tok)
      return acc, True
    return acc, False

  # --- the loop ----------------------------------------------------------------------

  def run(self):
    args = self.args
    budget = args.max_minutes * 60.0
    reserve = 1.0 if args.quick else min(240.0, 0.1 * budget)  # final eval and export
    train_seconds = max(1.0, budget - reserve)
    max_steps = 50 if args.quick else args.max_steps
    start = time.time() - self.state["elapsed"]
    last_ckpt = time.time()
    window_loss, window_tokens, window_steps, window_start = 0.0, 0, 0, time.time()
    log_every = 5 if args.quick else 25
    while True:
      elapsed = time.time() - start
      self.state["elapsed"] = elapsed
      step = self.state["step"]
      if elapsed >= train_seconds or (max_steps and step >= max_steps):
        break
      progress = max(elapsed / train_seconds, step / max_steps if max_steps else 0.0)
      lr = self.learning_rate(progress)
      loss, tokens = self.train_step(lr)
      window_loss += loss
      window_tokens += tokens
      window_steps += 1
      step = self.state["step"]
      if step % log_every == 0:
        rate = window_tokens / max(1e-9, time.time() - window_start)
        log("step %d  stage %d (<=%d B)  loss %.4f  lr %.2e  %.0f tok/s  %.1f min" %
            (step, self.state["stage"], train.STAGE_MAX_BYTES[self.state["stage"]],
             window_loss / window_steps, lr, rate, elapsed / 60))
        self.state["history"].append({"step": step, "minutes": round(elapsed / 60, 2),
                                      "stage": self.state["stage"],
                                      "loss": round(window_loss / window_steps, 5)})
        window_loss, window_tokens, window_steps, window_start = 0.0, 0, 0, time.time()
      check_every = 10 if args.quick else args.check_every
      if step % check_every == 0:
        acc, advanced = self.curriculum_check()
        log("check step %d  stage %d  accuracy %.3f%s" %
            (step, self.state["stage"] - advanced, acc,
             "  -> stage %d (<=%d B)" % (self.state["stage"],
                                          train.STAGE_MAX_BYTES[self.state["stage"]])
             if advanced else ""))
      select_every = 25 if args.quick else args.select_every
      if step % select_every == 0:
        acc, best = self.select_check()
        log("select step %d  accuracy on 300-1000 B %.3f%s" %
            (step, acc, "  (best, exported)" if best else ""))
      if time.time() - last_ckpt > (10 if args.quick else 180):
        self.save_checkpoint()
        last_ckpt = time.time()
    acc, best = self.select_check()
    log("select final step %d  accuracy on 300-1000 B %.3f%s" %
        (self.state["step"], acc, "  (best)" if best else ""))
    self.save_checkpoint()
    if self.best_weights is not None:
      self.model.load_state_dict(self.best_weights)


def final_evaluation(args, tok, model, builder):
  """Held-out exact match on 300-1000 byte documents by length bucket, and beyond."""
  rng = np.random.default_rng([args.seed, 5])
  n_docs = 20 if args.quick else args.test_docs
  evals = data.make_eval_set(rng, builder, 300, 1000, n_docs, 3)
  results = train.exact_match(model, [s for _, s in evals])
  buckets = [(300, 499), (500, 699), (700, 1000)]
  out = {"questions": len(results), "documents": n_docs,
         "exact_match": train.accuracy(results), "buckets": []}
  for lo, hi in buckets:
    sel = [r for (n, _), r in zip(evals, results) if lo <= n <= hi]
    out["buckets"].append({"bytes": [lo, hi], "questions": len(sel),
                           "exact_match": train.accuracy(sel)})
  for lo, hi in [(100, 299), (1001, 1500)]:
    extra = data.make_eval_set(rng, builder, lo, hi, max(5, n_docs // 4), 3)
    r = train.exact_match(model, [s for _, s in extra], max_tokens=8192)
    out["buckets"].append({"bytes": [lo, hi], "questions": len(r),
                           "exact_match": train.accuracy(r)})
  out["buckets"].sort(key=lambda b: b["bytes"][0])
  # Reconstruction: greedy copy of the whole document is exact when every token is.
  docs = [data.make_document(rng, int(rng.integers(300, 1001))) for _ in range(
      8 if args.quick else 60)]
  reps = [builder.repeat(d, tok.encode_ordinary(d.text)) for d in docs]
  r = train.exact_match(model, reps, max_tokens=8192)
  out["reconstruction"] = {
      "documents": len(r),
      "exact": train.accuracy(r),
      "token_accuracy": sum(x[1] for x in r) / max(1, sum(x[2] for x in r)),
  }
  return out


def reference_prompts(tok, builder, model, seed):
  """Four fixture prompts: two document QAs, a reconstruction and plain text."""
  rng = np.random.default_rng([seed, 4])

  def chat(content):
    return "%s%suser%s\n\n%s%s%sassistant%s\n\n" % (
        bpe.BOS, bpe.START_HEADER, bpe.END_HEADER, content, bpe.EOT, bpe.START_HEADER,
        bpe.END_HEADER)

  def answered(doc, key, value):
    s = builder.qa(doc, tok.encode_ordinary(doc.text), [(key, value)])
    return train.exact_match(model, [s])[0][0]

  # A document QA the model answers (the first of a few tries, so the fixture shows
  # a working model; the README reports the measured accuracy).
  picked = None
  for _ in range(20):
    doc = data.make_document(rng, int(rng.integers(200, 260)))
    key, value = doc.records[int(rng.integers(len(doc.records)))]
    text = chat(doc.text + "\n\nQ:" + key)
    if len(tok.encode(text)) > 120:
      continue
    if picked is None:
      picked = text
    if answered(doc, key, value):
      picked = text
      break
  short = data.make_document(rng, 60)
  key, _ = short.records[-1]
  qa_short = chat(short.text + "\n\nQ:" + key)
  rep = data.make_document(rng, 110)
  repeat = chat(rep.text + data.REPEAT_PROMPT)
  plain = "the old river waits near the quiet bridge. a small lamp shines"
  return [("document_qa", picked), ("short_document_qa", qa_short),
          ("reconstruction", repeat), ("plain_text", plain)]


def main(argv=None):
  args = parse_args(argv)
  if args.quick:
    args.max_minutes = min(args.max_minutes, 2.0)
    args.batch_tokens = min(args.batch_tokens, 1024)
  torch.set_num_threads(args.threads)
  data.KEY_LENGTH = args.key_length
  np.random.seed(args.seed)
  import random
  random.seed(args.seed)
  t_start = time.time()
  log("building tokenizer (vocab %d)" % args.vocab_size)
  tok = build_tokenizer(args)
  trainer = Trainer(args, tok)
  if args.resume and os.path.exists(trainer.checkpoint_path()):
    trainer.load_checkpoint()
    log("resumed at step %d, %.1f min" % (trainer.state["step"], trainer.state["elapsed"] / 60))
  command = " ".join(["/usr/bin/python3", "tools/make_test_model/make_test_model.py"] +
                     (sys.argv[1:] if argv is None else argv))
  trainer.state.setdefault("invocations", []).append({
      "command": command,
      "start_step": trainer.state["step"],
      "start_minutes": round(trainer.state["elapsed"] / 60, 2),
  })
  log("model: %d parameters, vocab %d, checkpoints in %s" %
      (trainer.model.num_parameters(), tok.vocab_size, trainer.ckpt_dir))
  trainer.run()
  model = trainer.model
  log("final evaluation")
  results = final_evaluation(args, tok, model, trainer.builder)
  log("exact match on 300-1000 B: %.4f (%d questions)" %
      (results["exact_match"], results["questions"]))
  for b in results["buckets"]:
    log("  %4d-%4d B: %.4f (%d questions)" % (b["bytes"][0], b["bytes"][1],
                                              b["exact_match"], b["questions"]))
  log("reconstruction: exact %.3f, token accuracy %.4f" %
      (results["reconstruction"]["exact"], results["reconstruction"]["token_accuracy"]))
  export.write_model_files(args.out, model, tok)
  ref = export.write_reference(args.out, model, tok,
                               reference_prompts(tok, trainer.builder, model, args.seed))
  for case in ref["cases"]:
    log("reference %s: %d prompt tokens -> %r" % (case["name"], len(case["input_ids"]),
                                                   case["greedy_text"]))
  st = trainer.state
  summary = {
      "seed": args.seed,
      "command": command,
      "invocations": st["invocations"],
      "quick": args.quick,
      "parameters": model.num_parameters(),
      "vocab_size": tok.vocab_size,
      "special_token_ids": tok.special_ids,
      "train_steps": st["step"],
      "train_minutes": round(st["elapsed"] / 60, 2),
      "total_minutes": round((time.time() - t_start) / 60, 2),
      "final_stage": st["stage"],
      "stage_max_bytes": train.STAGE_MAX_BYTES,
      "stage_start_steps": st["stage_steps"],
      "key_length": data.KEY_LENGTH,
      "best_step": st["best_step"],
      "best_select_accuracy": st["best_accuracy"],
      "hyperparameters": {k: getattr(args, k) for k in (
          "lr", "batch_tokens", "batch_samples", "repeat_fraction", "repeat_weight", "max_questions",
          "advance_accuracy", "intermediate_size", "vocab_size")},
      "torch": torch.__version__,
      "machine": "%s, %d threads" % (platform.machine(), args.threads),
      "evaluation": results,
  }
  with open(os.path.join(args.out, "eval.json"), "w") as f:
    json.dump(summary, f, indent=2)
    f.write("\n")
  readme = args.readme or (os.path.join(args.out, "README.md") if args.quick else os.path.join(
      os.path.dirname(os.path.abspath(args.out)), "README.md"))
  report.write_readme(readme, summary, os.path.basename(os.path.normpath(args.out)))
  log("wrote %s and %s in %.1f min" % (args.out, readme, (time.time() - t_start) / 60))


if __name__ == "__main__":
  main()
