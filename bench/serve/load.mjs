#!/usr/bin/env node
// Load generator for kvd's OpenAI HTTP API, driven by the official OpenAI SDK, or (--protocol
// grpc) for its gRPC API through @grpc/grpc-js: streams seeded random prompts at Poisson request
// rates and reports throughput and latency percentiles per rate, or, with --flood, one tenant's
// latency while another floods the server. See README.md.
import { setTimeout as Sleep } from 'node:timers/promises';

import { CreateClient } from './clients.mjs';
import { HelpText, ParseOptions, Validate } from './options.mjs';
import {
  FloodRow, kFloodTableHeader, kRateTableHeader, RateRow, Summarize,
} from './stats.mjs';
import { Arrivals, Prng, SubSeed, Words } from './workload.mjs';

const Now = () => performance.now();
const RateLabel = (rate) => (rate === Infinity ? 'inf' : String(rate));
const Log = (line) => process.stderr.write(`${line}\n`);

// Requests in flight, so that the drain bound and the global deadline can abort them. Each
// entry is {controller, reason}; `reason` names why we aborted it, and becomes its error kind.
class InFlight {
  constructor() { this.entries = new Set(); }
  Add(entry) { this.entries.add(entry); }
  Remove(entry) { this.entries.delete(entry); }
  AbortAll(reason) {
    for (const entry of this.entries) Abort(entry, reason);
  }
}

function Abort(entry, reason) {
  if (entry.reason !== null) return;
  entry.reason = reason;
  entry.controller.abort();
}

// The global deadline: a promise that settles when it passes, and a flag for dispatch loops.
class Deadline {
  constructor(seconds, in_flight) {
    this.passed = false;
    this.reached = new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.passed = true;
        Log(`deadline of ${seconds} s reached: aborting requests in flight`);
        in_flight.AbortAll('deadline');
        resolve();
      }, seconds * 1000);
      timer.unref();
    });
  }
  // Sleeps `ms`, or less if the deadline passes first.
  async Sleep(ms) {
    if (ms > 0) await Promise.race([Sleep(ms), this.reached]);
  }
}

// The error kind of a failed request: why we aborted it ("timeout", "drain", "deadline"), else
// the client's kind (the HTTP status or gRPC code of an error answer, "connection", "in-band"
// for an error after the stream started), else "exception".
function ErrorKind(client, error, entry) {
  if (entry.reason !== null) return entry.reason;
  return client.ErrorKind(error) ?? 'exception';
}

// Sends one streaming request and measures it. TTFT runs from the send to the first chunk with
// content; ITL is each gap between consecutive content chunks; TPOT spreads the time after the
// first token over the remaining completion_tokens - 1 (null for a single token).
async function RunRequest(client, options, text, in_flight) {
  const entry = { controller: new AbortController(), reason: null };
  in_flight.Add(entry);
  const timer = setTimeout(() => Abort(entry, 'timeout'), options.timeout * 1000);
  const start = Now();
  const fail = (error) => ({ ok: false, error, end: Now() });
  try {
    let first = null;
    let last = null;
    const itl_ms = [];
    let usage = null;
    for await (const message of client.Stream(text, entry.controller.signal)) {
      const now = Now();
      const { content } = message;
      if (message.usage) usage = message.usage;
      if (content) {
        if (first === null) first = now;
        else itl_ms.push(now - last);
        last = now;
      }
    }
    const end = Now();
    // The SDK ends the iteration quietly when its signal aborts, so ask why it ended.
    if (entry.reason !== null) return fail(entry.reason);
    if (usage === null) return fail('no-usage');
    if (first === null) return fail('no-content');
    const tokens = usage.completion_tokens;
    return {
      ok: true,
      end,
      ttft_ms: first - start,
      itl_ms,
      tpot_ms: tokens > 1 ? (end - first) / (tokens - 1) : null,
      e2e_s: (end - start) / 1000,
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: tokens,
    };
  } catch (error) {
    const kind = ErrorKind(client, error, entry);
    if (kind === 'exception') Log(`request failed: ${error?.stack ?? error}`);
    return fail(kind);
  } finally {
    clearTimeout(timer);
    in_flight.Remove(entry);
  }
}

// Prompt sizing: the prompt token count of random words is close to linear in their length in
// characters (the chat template or BOS add a constant), so two probes (one word, then about
// --prompt-tokens characters) give tokens per character and the constant.
async function Calibrate(client, options) {
  const random = Prng(SubSeed(options.seed, 'calibration'));
  // Probes get at least 30 s, so a short --timeout still lets the run start.
  const probe = async (text) => ({
    chars: text.length,
    tokens: await client.Probe(text, Math.max(options.timeout, 30) * 1000),
  });
  const short = await probe(Words(random, 1));
  const long = await probe(Words(random, Math.max(200, options.promptTokens)));
  const per_char = (long.tokens - short.tokens) / (long.chars - short.chars);
  if (!(per_char > 0)) {
    throw new Error(`prompt tokens do not grow with length (${short.tokens}, ${long.tokens})`);
  }
  const overhead = short.tokens - per_char * short.chars;
  const chars = Math.max(1, Math.round((options.promptTokens - overhead) / per_char));
  return { tokens_per_char: per_char, overhead_tokens: overhead, prompt_chars: chars };
}

// Runs one window: each lane ({name, client, arrivals, random}) sends its requests at its
// arrival offsets from a common start; then requests still in flight are awaited for at most
// --drain seconds and the rest aborted. Returns each lane's summary, with the client process's
// CPU time over the window when there is one lane (with two it cannot be told apart).
async function RunWindow(lanes, options, calibration, in_flight, deadline) {
  const start = Now();
  const cpu_start = process.cpuUsage();
  const lane_results = lanes.map(() => []);
  const pending = [];
  await Promise.all(lanes.map(async (lane, index) => {
    for (const offset of lane.arrivals) {
      await deadline.Sleep(start + offset * 1000 - Now());
      if (deadline.passed) return;
      const text = Words(lane.random, calibration.prompt_chars);
      pending.push(RunRequest(lane.client, options, text, in_flight)
        .then((result) => lane_results[index].push(result)));
    }
  }));
  const all_settled = Promise.all(pending);
  const drained = await Promise.race([
    all_settled.then(() => true),
    Sleep(options.drain * 1000, false, { ref: false }),
  ]);
  if (!drained) {
    Log(`aborting ${in_flight.entries.size} requests still in flight after --drain`);
    in_flight.AbortAll('drain');
  }
  await all_settled;
  const cpu = process.cpuUsage(cpu_start);
  const cpu_s = lanes.length === 1 ? (cpu.user + cpu.system) / 1e6 : null;
  return lane_results.map((results) => {
    const end = results.reduce((latest, r) => Math.max(latest, r.end), start);
    return Summarize(results, (end - start) / 1000, cpu_s);
  });
}

async function Main() {
  let options;
  let rates;
  try {
    options = ParseOptions(process.argv.slice(2));
    if (options.help) {
      console.log(HelpText());
      return 0;
    }
    rates = Validate(options);
  } catch (error) {
    Log(`load.mjs: ${error.message}`);
    return 2;
  }

  const in_flight = new InFlight();
  const deadline = new Deadline(options.deadline, in_flight);
  const client_a = CreateClient(options, options.apiKey);
  const client_b = options.flood ? CreateClient(options, options.apiKeyB) : null;
  try {
    return await Run(options, rates, client_a, client_b, in_flight, deadline);
  } finally {
    client_a.Close();
    client_b?.Close();
  }
}

// Calibrates, then runs every window and prints its rows (or the JSON document at the end).
async function Run(options, rates, client_a, client_b, in_flight, deadline) {
  let calibration;
  try {
    calibration = await Calibrate(client_a, options);
  } catch (error) {
    Log(`load.mjs: probe request to ${client_a.address} failed: ${error.message}`);
    return 1;
  }
  const { endpoint } = client_a;
  const per_rate = options.requests > 0 ? `${options.requests} requests` : '';
  const per_window = [per_rate, options.duration > 0 ? `${options.duration} s` : '']
    .filter((part) => part !== '').join(' or ');
  if (!options.json) {
    console.log(`${options.model} at ${client_a.address} (${endpoint}),` +
                ` prompt ~${options.promptTokens} tokens, max_tokens ${options.maxTokens},` +
                ` ignore_eos ${options.ignoreEos},` +
                ` ${per_window} per rate, seed ${options.seed}` +
                (options.flood ? `, tenant b at ${options.rateB} req/s` : ''));
    console.log('');
    console.log(options.flood ? kFloodTableHeader : kRateTableHeader);
  }

  const results = [];
  for (const rate of rates) {
    if (deadline.passed) break;
    const label = RateLabel(rate);
    const lane = (name, client, lane_rate, count, duration) => ({
      name,
      client,
      arrivals: Arrivals(Prng(SubSeed(options.seed, name, label, 'arrivals')), lane_rate, count,
                         duration),
      random: Prng(SubSeed(options.seed, name, label, 'prompts')),
    });
    const lanes = [lane('a', client_a, rate, options.requests, options.duration)];
    if (options.flood) {
      const window = options.duration > 0 ? options.duration : lanes[0].arrivals.at(-1);
      lanes.push(lane('b', client_b, options.rateB, 0, window));
    }
    const counts = lanes.map((l) => `${l.arrivals.length} (${l.name})`).join(', ');
    Log(`rate ${label}: sending ${counts}`);
    const summaries = await RunWindow(lanes, options, calibration, in_flight, deadline);
    if (options.flood) {
      results.push({ rate_a: label, rate_b: options.rateB, a: summaries[0], b: summaries[1] });
      if (!options.json) {
        console.log(FloodRow('a', label, summaries[0]));
        console.log(FloodRow('b', String(options.rateB), summaries[1]));
      }
    } else {
      results.push({ rate: label, ...summaries[0] });
      if (!options.json) console.log(RateRow(label, summaries[0]));
    }
  }

  if (options.json) {
    const shown = { ...options, apiKey: '(hidden)', apiKeyB: options.apiKeyB ? '(hidden)' : '' };
    console.log(JSON.stringify({ options: shown, endpoint, calibration, results }, null, 2));
  }
  return deadline.passed ? 1 : 0;
}

process.exitCode = await Main();
