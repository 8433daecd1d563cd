// Summaries of one load window: nearest-rank percentiles over the per-request samples, and the
// markdown tables load.mjs prints.

// The p-th percentile (0 < p <= 100) by nearest rank: the smallest sample with at least p% of
// the samples at or below it, i.e. sorted[ceil(p/100 * n) - 1]. No interpolation, so every
// figure is a latency some request really saw. null for no samples.
export function Percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}

const Sorted = (values) => Float64Array.from(values).sort();
const Mean = (values) =>
  values.length === 0 ? null : values.reduce((sum, v) => sum + v, 0) / values.length;

// Percentiles of `values` (unsorted) at each of `ps`, as {p50: ..., p99: ...}.
function Percentiles(values, ps) {
  const sorted = Sorted(values);
  return Object.fromEntries(ps.map((p) => [`p${p}`, Percentile(sorted, p)]));
}

// Summary of the finished requests of one window. Each result is what RunRequest returns:
// {ok, error, ttft_ms, itl_ms[], tpot_ms, e2e_s, prompt_tokens, completion_tokens}.
// `elapsed_s` runs from the window's start to the last request's end (success or not);
// `client_cpu_s` is the load generator's CPU time (user + system) over the same span, or null.
export function Summarize(results, elapsed_s, client_cpu_s = null) {
  const ok = results.filter((r) => r.ok);
  const errors = {};
  for (const r of results) {
    if (!r.ok) errors[r.error] = (errors[r.error] ?? 0) + 1;
  }
  const output_tokens = ok.reduce((sum, r) => sum + r.completion_tokens, 0);
  const ps = [50, 90, 99];
  return {
    sent: results.length,
    completed: ok.length,
    failed: results.length - ok.length,
    errors,
    elapsed_s,
    request_throughput: elapsed_s > 0 ? ok.length / elapsed_s : null,
    output_throughput: elapsed_s > 0 ? output_tokens / elapsed_s : null,
    prompt_tokens_mean: Mean(ok.map((r) => r.prompt_tokens)),
    completion_tokens_mean: Mean(ok.map((r) => r.completion_tokens)),
    output_tokens,
    ttft_ms: Percentiles(ok.map((r) => r.ttft_ms), ps),
    tpot_ms: Percentiles(ok.filter((r) => r.tpot_ms !== null).map((r) => r.tpot_ms), ps),
    itl_ms: Percentiles(ok.flatMap((r) => r.itl_ms), ps),
    itl_ms_mean: Mean(ok.flatMap((r) => r.itl_ms)),
    e2e_s: Percentiles(ok.map((r) => r.e2e_s), ps),
    client_cpu_s,
    client_cpu_us_per_token:
      client_cpu_s !== null && output_tokens > 0 ? (client_cpu_s * 1e6) / output_tokens : null,
  };
}

// Fixed-point text for a table cell; "-" for a missing figure.
export function Fixed(value, digits) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '-';
  return value.toFixed(digits);
}

// "429: 3, timeout: 1", or "0".
export function ErrorText(errors) {
  const entries = Object.entries(errors);
  if (entries.length === 0) return '0';
  return entries.map(([kind, count]) => `${kind}: ${count}`).join(', ');
}

export const kRateTableHeader = [
  '| rate | completed | errors | prompt tok | req/s | out tok/s ' +
    '| TTFT p50 | p90 | p99 (ms) | TPOT p50 | p90 | p99 (ms) | ITL p50 | p90 | p99 (ms) ' +
    '| E2E p50 | p99 (s) | client CPU (µs/tok) |',
  '|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
].join('\n');

// One row of the per-rate table.
export function RateRow(rate_label, s) {
  const cells = [
    rate_label,
    `${s.completed}/${s.sent}`,
    ErrorText(s.errors),
    Fixed(s.prompt_tokens_mean, 0),
    Fixed(s.request_throughput, 2),
    Fixed(s.output_throughput, 1),
    Fixed(s.ttft_ms.p50, 1), Fixed(s.ttft_ms.p90, 1), Fixed(s.ttft_ms.p99, 1),
    Fixed(s.tpot_ms.p50, 2), Fixed(s.tpot_ms.p90, 2), Fixed(s.tpot_ms.p99, 2),
    Fixed(s.itl_ms.p50, 2), Fixed(s.itl_ms.p90, 2), Fixed(s.itl_ms.p99, 2),
    Fixed(s.e2e_s.p50, 3), Fixed(s.e2e_s.p99, 3),
    Fixed(s.client_cpu_us_per_token, 1),
  ];
  return `| ${cells.join(' | ')} |`;
}

export const kFloodTableHeader = [
  '| tenant | rate | completed | 429 | other errors | req/s | out tok/s ' +
    '| TTFT p50 | p99 (ms) | E2E p50 | p99 (s) |',
  '|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|',
].join('\n');

// One row of the flood table: one tenant's side of one window.
// Refusals by a tenant limit are HTTP 429, or gRPC's RESOURCE_EXHAUSTED.
export function FloodRow(tenant, rate_label, s) {
  const { 429: http_rejected = 0, RESOURCE_EXHAUSTED: grpc_rejected = 0, ...others } = s.errors;
  const rejected = http_rejected + grpc_rejected;
  const cells = [
    tenant,
    rate_label,
    `${s.completed}/${s.sent}`,
    String(rejected),
    ErrorText(others),
    Fixed(s.request_throughput, 2),
    Fixed(s.output_throughput, 1),
    Fixed(s.ttft_ms.p50, 1), Fixed(s.ttft_ms.p99, 1),
    Fixed(s.e2e_s.p50, 3), Fixed(s.e2e_s.p99, 3),
  ];
  return `| ${cells.join(' | ')} |`;
}
