#!/usr/bin/env node
// Document QA accuracy of kvd's KV compression methods over its HTTP API: uploads seeded
// synthetic key-value documents per method and ratio (or sends them in each question with a
// KeepKV budget), asks for values, prints exact-match accuracy as a markdown table. See
// README.md.
import { writeFileSync } from 'node:fs';

import { ApiError, KvdApi } from './api.mjs';
import { BenchDocument } from './documents.mjs';
import {
  CompressionOf, HelpText, IsInlineMethod, KeepKvRule, ParseOptions, Plan,
} from './options.mjs';

const kErrorsShown = 5;  // per method and ratio, on stderr
// With --completions, what follows the document in a question: the bundled model's question
// and its answer turn (models/README.md), which the completion continues.
const QuestionPrompt = (key) =>
  `\n\nQ:${key}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n`;

const Now = () => performance.now();
const Log = (line) => process.stderr.write(`${line}\n`);
const RatioLabel = (ratio) => (Number.isInteger(ratio) ? ratio.toFixed(1) : String(ratio));
const Mean = (values) => values.reduce((sum, v) => sum + v, 0) / values.length;

// Calls fn(item) for every item, at most `limit` at once; returns the results in item order.
async function Pool(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

// fn's value, or the text of the ApiError it threw as {error}; anything else is a bug and throws.
async function Try(fn) {
  try {
    return { value: await fn() };
  } catch (error) {
    if (error instanceof ApiError) return { error: error.message };
    throw error;
  }
}

// Uploads one document compressed with `method` at `ratio`, stored in `kvDtype`, and waits
// until it is ready. snapkv compresses for the document's first question. Returns what the
// server reported about it and the upload's wall time until ready.
async function Store(api, doc, method, ratio, kvDtype) {
  const compression = { ...CompressionOf(method), ratio, kv_dtype: kvDtype };
  if (method === 'snapkv') compression.query = `Q:${doc.questions[0].key}`;
  const start = Now();
  const created = await Try(() =>
    api.Create(doc.text, compression, { bench: 'quality', document: String(doc.index) }));
  if (created.error) return { index: doc.index, id: null, status: 'error', error: created.error };
  const stored = { index: doc.index, id: created.value.id, status: 'error' };
  const done = await Try(() => api.WaitReady(created.value));
  if (done.error) return { ...stored, error: done.error };
  const d = done.value;
  Object.assign(stored, {
    status: d.status, token_count: d.token_count, kept_entries: d.kept_entries,
    stored_bytes: d.stored_bytes, ratio: d.ratio, kv_dtype: d.kv_dtype,
    upload_s: (Now() - start) / 1000,
  });
  if (d.status === 'failed') stored.error = `document ${d.id} failed: ${d.failure_reason}`;
  return stored;
}

// One question: the stored document's id with "Q:KEY", or for inline and keepkv the document
// in the message; keepkv with a budget of `ratio` of the prompt, the others with KeepKV off.
// With `completions`, a completion of the document's continuation instead. Exact match of the
// trimmed answer.
async function AskOne(api, model, doc, n, stored, cell, completions) {
  const { method, ratio, kvDtype } = cell;
  const { key, value } = doc.questions[n];
  const result = {
    doc: doc.index, question: n, key, expected: value, got: null, method, ratio, kv_dtype: kvDtype,
  };
  if (stored !== null && stored.status !== 'ready') {
    return { ...result, correct: false, error: stored.error };
  }
  const documents = stored === null ? undefined : [stored.id];
  const rule = KeepKvRule(method);
  const answer = await Try(() => {
    if (completions) {
      const prompt = stored === null ? doc.text + QuestionPrompt(key) : QuestionPrompt(key);
      return api.Complete(model, prompt, { documents });
    }
    const content = stored === null ? `${doc.text}\n\nQ:${key}` : `Q:${key}`;
    return api.Ask(model, content, {
      documents, keepkv: rule === null ? null : { budget: ratio, method: rule },
    });
  });
  if (answer.error) return { ...result, correct: false, error: answer.error };
  const { content: got, prompt_tokens } = answer.value;
  return { ...result, got, prompt_tokens, correct: got.trim() === value };
}

// One method at one ratio and precision: uploads every document, asks all questions, deletes
// the documents.
async function RunCell(api, model, docs, { method, ratio, kvDtype }, options) {
  const start = Now();
  const { concurrency } = options;
  const stored = IsInlineMethod(method)
    ? docs.map(() => null)
    : await Pool(docs, concurrency, (doc) => Store(api, doc, method, ratio, kvDtype));
  const asks = docs.flatMap((doc) => doc.questions.map((_, n) => ({ doc, n })));
  const results = await Pool(asks, concurrency, ({ doc, n }) =>
    AskOne(api, model, doc, n, stored[doc.index], { method, ratio, kvDtype },
           options.completions));
  const deletes = await Pool(stored.filter((s) => s?.id), concurrency,
                             (s) => Try(() => api.Delete(s.id)));
  const errors = [
    ...stored.filter((s) => s?.error).map((s) => s.error),
    ...results.filter((r) => r.error && !stored[r.doc]?.error).map((r) => r.error),
    ...deletes.filter((d) => d.error).map((d) => d.error),
  ];
  return {
    method, ratio, kvDtype, wall_s: (Now() - start) / 1000, documents: stored, results, errors,
  };
}

// "93.3 (112/120)": exact match over the answered questions, and how many failed; '-' for none.
function AccuracyCell(results) {
  if (results.length === 0) return '-';
  const answered = results.filter((r) => !r.error);
  const correct = answered.filter((r) => r.correct).length;
  const failed = results.length - answered.length;
  const percent = answered.length > 0 ? (100 * correct / answered.length).toFixed(1) : '-';
  return `${percent} (${correct}/${answered.length}${failed > 0 ? `, ${failed} failed` : ''})`;
}

// "0.300, 12.4 KiB": the mean `ratio` and `stored_bytes` the server reported for the ready
// documents; '-' where none is stored.
function KeptCell(cell) {
  const ready = cell.documents.filter((d) => d?.status === 'ready');
  if (ready.length === 0) return '-';
  const mean = (field, digits, scale = 1) => {
    const values = ready.map((d) => d[field]).filter((v) => typeof v === 'number');
    return values.length > 0 ? (Mean(values) / scale).toFixed(digits) : '?';
  };
  return `${mean('ratio', 3)}, ${mean('stored_bytes', 1, 1024)} KiB`;
}

// The mean over the ready documents of `field` relative to the same document's in `reference`
// (the uncompressed f32 cache): "0.062"; '-' where either is missing.
function RelativeCell(cell, reference, field) {
  const ratios = cell.documents.flatMap((d, i) => {
    const base = reference?.documents[i];
    if (d?.status !== 'ready' || base?.status !== 'ready' || !(base[field] > 0)) return [];
    return [d[field] / base[field]];
  });
  return ratios.length > 0 ? Mean(ratios).toFixed(3) : '-';
}

// "22.9 / 219.4": for keepkv, the mean budget in tokens (the ratio of each answered question's
// `prompt_tokens`, rounded up, as kvd rounds it) and the mean prompt.
function BudgetCell(cell) {
  const prompts = cell.results.map((r) => r.prompt_tokens).filter((t) => typeof t === 'number');
  if (prompts.length === 0) return '-';
  const budgets = prompts.map((t) => Math.max(1, Math.ceil(cell.ratio * t)));
  return `${Mean(budgets).toFixed(1)} / ${Mean(prompts).toFixed(1)}`;
}

// A markdown table with one column per ratio that any cell ran at. `rows`: [[label, {method,
// kvDtype}, cell => text]]; '-' where the method did not run at a ratio.
function Table(cells, rows) {
  const ratios = [...new Set(cells.map((c) => c.ratio))].sort((x, y) => x - y);
  const lines = rows.map(([label, { method, kvDtype }, Text]) => {
    const texts = ratios.map((ratio) => {
      const cell =
        cells.find((c) => c.method === method && c.kvDtype === kvDtype && c.ratio === ratio);
      return cell ? Text(cell) : '-';
    });
    return `| ${label} | ${texts.join(' | ')} |`;
  });
  return [
    `| method | ${ratios.map(RatioLabel).join(' | ')} |`,
    `|---|${ratios.map(() => '---|').join('')}`,
    ...lines,
  ].join('\n');
}

// A row's label: the method, and the precision when the run stores more than one.
const RowLabel = ({ method, kvDtype }, several) =>
  (several && kvDtype !== null ? `${method} ${kvDtype}` : method);

// Rows of the accuracy table: one per method and precision; snapkv, compressed for the first
// question, adds its first and its other questions apart.
function AccuracyRows(kinds, several) {
  const Of = (pick) => (cell) => AccuracyCell(cell.results.filter((r) => pick(r.question)));
  return kinds.flatMap((kind) => [
    [RowLabel(kind, several), kind, Of(() => true)],
    ...(kind.method === 'snapkv' ? [
      [`${RowLabel(kind, several)}, first question`, kind, Of((q) => q === 0)],
      [`${RowLabel(kind, several)}, other questions`, kind, Of((q) => q > 0)],
    ] : []),
  ]);
}

async function Main() {
  let options;
  let plan;
  let docs;
  try {
    options = ParseOptions(process.argv.slice(2));
    if (options.help) {
      console.log(HelpText());
      return 0;
    }
    plan = Plan(options);
    docs = Array.from({ length: options.documents }, (_, i) =>
      BenchDocument(options.seed, i, options.minBytes, options.maxBytes, options.questions));
  } catch (error) {
    Log(`quality.mjs: ${error.message}`);
    return 2;
  }
  const start = Now();
  const api = new KvdApi(options.baseUrl, options.apiKey, options.timeout);
  let model = options.model;
  if (model === '') {
    const first = await Try(() => api.FirstModel());
    if (first.error) {
      Log(`quality.mjs: ${first.error}`);
      return 1;
    }
    model = first.value;
  }
  const questions = docs.reduce((sum, d) => sum + d.questions.length, 0);
  console.log(`${model} at ${options.baseUrl}: ${docs.length} documents of ` +
              `${options.minBytes}-${options.maxBytes} bytes (mean ` +
              `${Mean(docs.map((d) => d.text.length)).toFixed(0)} bytes, ` +
              `${Mean(docs.map((d) => d.records.length)).toFixed(1)} records), ` +
              `${questions} questions, seed ${options.seed}`);

  const cells = [];
  for (const step of plan) {
    const cell = await RunCell(api, model, docs, step, options);
    cells.push(cell);
    Log(`${RowLabel(step, true)} ${RatioLabel(step.ratio)}: ${AccuracyCell(cell.results)} ` +
        `in ${cell.wall_s.toFixed(1)} s`);
    for (const error of cell.errors.slice(0, kErrorsShown)) Log(`  error: ${error}`);
    if (cell.errors.length > kErrorsShown) {
      Log(`  ... and ${cell.errors.length - kErrorsShown} more errors (--json keeps them all)`);
    }
  }
  const wall_s = (Now() - start) / 1000;

  console.log('');
  console.log('Exact match, % (correct/answered):');
  console.log('');
  // Each method with each precision it ran at, in plan order.
  const kinds = [...new Map(plan.map((p) => [`${p.method} ${p.kvDtype}`, p])).values()];
  const several = new Set(plan.map((p) => p.kvDtype).filter((d) => d !== null)).size > 1;
  const Rows = (kindsShown, Text) => kindsShown.map((k) => [RowLabel(k, several), k, Text]);
  console.log(Table(cells, AccuracyRows(kinds, several)));
  console.log('');
  const stored_kinds = kinds.filter((k) => !IsInlineMethod(k.method));
  if (stored_kinds.length > 0) {
    console.log('Server-reported `ratio` and `stored_bytes`, mean over the ready documents:');
    console.log('');
    console.log(Table(cells, Rows(stored_kinds, KeptCell)));
    console.log('');
  }
  const reference = cells.find((c) => c.method === 'none' && c.kvDtype === 'f32');
  if (reference && stored_kinds.length > 1) {
    for (const [what, field] of [['Stored bytes', 'stored_bytes'], ['Upload time', 'upload_s']]) {
      console.log(`${what} relative to the same document uploaded with method none in f32 ` +
                  '(prefilled and stored whole), mean over the ready documents:');
      console.log('');
      console.log(Table(cells, Rows(stored_kinds, (c) => RelativeCell(c, reference, field))));
      console.log('');
    }
  }
  const keepkv_kinds = kinds.filter((k) => KeepKvRule(k.method) !== null);
  if (keepkv_kinds.length > 0) {
    console.log('KeepKV budget per (layer, kv head) / prompt, mean tokens over the answered ' +
                'questions:');
    console.log('');
    console.log(Table(cells, Rows(keepkv_kinds, BudgetCell)));
    console.log('');
  }
  const errors = cells.reduce((sum, c) => sum + c.errors.length, 0);
  console.log(`wall time ${wall_s.toFixed(1)} s` +
              (errors > 0 ? `, ${errors} errors (on stderr, all in --json)` : ''));

  if (options.json !== '') {
    const shown = { ...options, apiKey: options.apiKey === '' ? '' : '(hidden)' };
    const report = {
      options: shown, model, wall_s,
      documents: docs,
      cells: cells.map(({ results, ...cell }) => cell),
      results: cells.flatMap((c) => c.results),
    };
    try {
      writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    } catch (error) {
      Log(`quality.mjs: --json: ${error.message}`);
      return 1;
    }
  }
  return errors > 0 ? 1 : 0;
}

process.exitCode = await Main();
