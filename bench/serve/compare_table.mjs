#!/usr/bin/env node
// The table of compare_protocols.sh: one markdown row per run, from load.mjs's JSON
// (OUT_DIR/<protocol>-<pair>.json) and the server-side samples (OUT_DIR/server.txt).
import { readFileSync } from 'node:fs';

import { Fixed } from './stats.mjs';

const dir = process.argv[2];
const runs = readFileSync(`${dir}/server.txt`, 'utf8').trim().split('\n').map((line) => {
  const [protocol, pair, ...fields] = line.split(' ');
  const values = Object.fromEntries(fields.map((field) => field.split('=')).map(
    ([key, value]) => [key, Number(value)]));
  return { protocol, pair, ...values };
});

console.log([
  '| pair | protocol | completed | out tok/s | TTFT p50 | p90 | p99 (ms) | ITL mean | p50 | p90 ' +
    '| p99 (ms) | E2E p50 (s) | client CPU (µs/tok) | server CPU (µs/tok) | steps | mean batch ' +
    '| step − forward (µs/tok) |',
  '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
].join('\n'));
for (const run of runs) {
  const { results } = JSON.parse(readFileSync(`${dir}/${run.protocol}-${run.pair}.json`, 'utf8'));
  const s = results[0];
  const tokens = s.output_tokens;
  const cells = [
    run.pair,
    run.protocol === 'grpc' ? 'gRPC' : 'HTTP/SSE',
    `${s.completed}/${s.sent}`,
    Fixed(s.output_throughput, 0),
    Fixed(s.ttft_ms.p50, 1), Fixed(s.ttft_ms.p90, 1), Fixed(s.ttft_ms.p99, 1),
    Fixed(s.itl_ms_mean, 2), Fixed(s.itl_ms.p50, 2), Fixed(s.itl_ms.p90, 2), Fixed(s.itl_ms.p99, 2),
    Fixed(s.e2e_s.p50, 3),
    Fixed(s.client_cpu_us_per_token, 1),
    Fixed((run.server_cpu_ticks / run.clk_tck) * 1e6 / tokens, 1),
    String(run.steps),
    Fixed(tokens / run.steps, 1),
    Fixed((run.step_s - run.forward_s) * 1e6 / tokens, 1),
  ];
  console.log(`| ${cells.join(' | ')} |`);
}
