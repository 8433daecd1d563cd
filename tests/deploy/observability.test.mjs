// deploy/grafana and deploy/prometheus against the real kvd: every metric name in the
// dashboard's queries, the alerting rules and the KEDA trigger is one that kvd exports (read
// from a live /metrics), the dashboard's queries are valid PromQL (promtool), and both cover
// what an operator needs.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { deployDir, startKvd, tinyModel } from './common.mjs';

const dashboard = JSON.parse(readFileSync(join(deployDir, 'grafana/kvd-dashboard.json'), 'utf8'));
const rules = parse(readFileSync(join(deployDir, 'prometheus/kvd-rules.yaml'), 'utf8'));
const scaledObject = parse(readFileSync(join(deployDir, 'k8s/overlays/monitoring/scaledobject.yaml'), 'utf8'));
// Series Prometheus makes itself for every target, not kvd's.
const prometheusSeries = new Set(['up']);

let families;  // name -> type, from kvd's /metrics

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kvd-deploy-metrics-'));
  const server = await startKvd(['--model', tinyModel, '--threads', '1', '--data-dir', join(dir, 'data')]);
  try {
    // One request, so that every histogram has observations.
    const reply = await fetch(`${server.url}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'kvd-tiny', prompt: 'the old river', max_tokens: 4, temperature: 0 }),
    });
    assert.equal(reply.status, 200);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    families = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.logs());
  }
  assert.ok(families.size > 10, 'kvd exported its metric families');
});

// The metric names a PromQL expression selects: strings, label matchers, ranges, label lists
// and numbers removed; what is left that is neither a function, a keyword nor a variable.
const keywords = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right',
  'offset', 'bool', 'and', 'or', 'unless']);
function metricNames(expression) {
  const stripped = expression
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\boffset\s+\S+/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ')
    .replace(/(?<![\w:])\d[\w.+-]*/g, ' ');
  return [...stripped.matchAll(/[A-Za-z_:][\w:]*(?!\s*\(|[\w:])/g)]
    .map((m) => m[0]).filter((name) => !keywords.has(name));
}

// The family a sample name belongs to: histogram series carry _bucket, _sum and _count.
function family(name) {
  if (families.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && ['histogram', 'summary'].includes(families.get(base)) ? base : null;
}

const panels = dashboard.panels.filter((p) => p.type !== 'row');
const dashboardExpressions = panels.flatMap((p) => p.targets.map((t) => t.expr));
const variableQueries = dashboard.templating.list.filter((v) => v.type === 'query')
  .map((v) => (typeof v.query === 'string' ? v.query : v.query.query));
const ruleList = rules.groups.flatMap((g) => g.rules);

test('the metric name extraction sees through PromQL', () => {
  assert.deepEqual(metricNames(
    'histogram_quantile(0.9, sum by (le, model_name) (rate(vllm:a_bucket{x="y{z}",m=~"$m"}[$__rate_interval]))) > 1e3'),
  ['vllm:a_bucket']);
  assert.deepEqual(metricNames('sum(rate(a_total[5m] offset 1h)) / on (x) group_left b and c > bool 2'),
    ['a_total', 'b', 'c']);
});

test('every metric the dashboard queries is one kvd exports', () => {
  const unknown = [];
  for (const expression of dashboardExpressions) {
    for (const name of metricNames(expression)) if (!family(name)) unknown.push(`${name} in ${expression}`);
  }
  for (const query of variableQueries) {
    const match = /^label_values\(([^,]+),\s*\w+\)$/.exec(query);
    assert.ok(match, `variable query ${query}`);
    for (const name of metricNames(match[1])) if (!family(name)) unknown.push(`${name} in ${query}`);
  }
  assert.deepEqual(unknown, []);
});

test('every metric the alerting rules and the KEDA trigger use is one kvd exports', () => {
  const expressions = [...ruleList.map((r) => r.expr),
    ...scaledObject.spec.triggers.map((t) => t.metadata.query)];
  const unknown = expressions.flatMap((e) => metricNames(e)
    .filter((name) => !family(name) && !prometheusSeries.has(name)).map((name) => `${name} in ${e}`));
  assert.deepEqual(unknown, []);
});

test('the dashboard queries are valid PromQL', () => {
  // promtool parses rule files: each query becomes a recording rule, Grafana's variables
  // replaced by values.
  const record = panels.flatMap((p) => p.targets.map((t) => ({
    record: `dashboard:panel_${p.id}_${t.refId}`,
    expr: t.expr.replaceAll('$__rate_interval', '5m').replaceAll('$model_name', '.*')
      .replaceAll('$tenant', '.*'),
  })));
  const file = join(mkdtempSync(join(tmpdir(), 'kvd-deploy-promql-')), 'dashboard-rules.yaml');
  writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules: record }] }));
  const result = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stdout + result.stderr);
});

test('the dashboard is shaped for any Prometheus data source and filters by model and tenant', () => {
  const variables = Object.fromEntries(dashboard.templating.list.map((v) => [v.name, v]));
  assert.equal(variables.datasource?.type, 'datasource');
  assert.equal(variables.datasource.query, 'prometheus');
  assert.equal(variables.model_name?.type, 'query');
  assert.equal(variables.tenant?.type, 'query');
  assert.ok(dashboard.uid && dashboard.title);
  const ids = dashboard.panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length, 'unique panel ids');
  for (const panel of panels) {
    assert.equal(panel.datasource.uid, '${datasource}', panel.title);
    assert.ok(panel.targets.length > 0, panel.title);
    for (const target of panel.targets) {
      assert.equal(target.datasource.uid, '${datasource}', panel.title);
      for (const selector of target.expr.matchAll(/([A-Za-z_:][\w:]*)\{([^}]*)\}/g)) {
        assert.match(selector[2], /model_name=~"\$model_name"/, `${panel.title}: ${selector[0]}`);
      }
    }
  }
  for (const panel of panels.filter((p) => /tenant/i.test(p.title))) {
    for (const target of panel.targets) assert.match(target.expr, /tenant=~"\$tenant"/, panel.title);
  }
});

test('the dashboard covers latencies, load, cache, scheduler, tenants, KeepKV, the shared tier and the prefix cache', () => {
  const all = dashboardExpressions.join('\n');
  for (const histogram of ['vllm:time_to_first_token_seconds', 'vllm:inter_token_latency_seconds',
    'vllm:e2e_request_latency_seconds', 'vllm:request_queue_time_seconds']) {
    for (const q of ['0.5', '0.9', '0.99']) {
      assert.ok(dashboardExpressions.some((e) => e.startsWith(`histogram_quantile(${q},`) &&
        e.includes(`${histogram}_bucket{`)), `p${Number(q) * 100} of ${histogram}`);
    }
  }
  for (const name of ['kvd_tenant_requests_total', 'vllm:num_requests_running', 'vllm:num_requests_waiting',
    'vllm:kv_cache_usage_perc', 'vllm:num_preemptions_total', 'vllm:prompt_tokens_total',
    'vllm:generation_tokens_total', 'kvd_scheduler_step_seconds_total', 'kvd_scheduler_forward_seconds_total',
    'kvd_scheduler_steps_total', 'kvd_tenant_rejections_total', 'kvd_tenant_prompt_tokens_total',
    'kvd_tenant_generation_tokens_total', 'kvd_tenant_requests_running', 'kvd_tenant_requests_waiting',
    'kvd_keepkv_merges_total', 'kvd_keepkv_evictions_total', 'kvd_keepkv_refreshes_total',
    'kvd_keepkv_compressed_fraction', 'kvd_document_remote_requests_total',
    'kvd_document_remote_failures_total', 'kvd_document_remote_lookups_total',
    'kvd_document_remote_bytes_total', 'kvd_document_remote_request_seconds_bucket',
    'vllm:prefix_cache_hits_total', 'vllm:prefix_cache_queries_total', 'kvd_tenant_prefix_cache_hits_total',
    'kvd_tenant_prefix_cache_queries_total', 'kvd_prefix_cache_blocks']) {
    assert.ok(all.includes(`${name}{`), name);
  }
});

test('the alerting rules cover the failure modes, each with a hold time and a severity', () => {
  const names = ruleList.map((r) => r.alert);
  for (const alert of ['KvdTargetDown', 'KvdHighQueueTime', 'KvdHigh5xxRate', 'KvdKvCacheNearlyFull',
    'KvdHighPreemptionRate', 'KvdTenantRejectionsSpiking', 'KvdDocumentCompressionsFailing',
    'KvdSharedTierFailing']) {
    assert.ok(names.includes(alert), alert);
  }
  for (const rule of ruleList) {
    assert.match(rule.for ?? '', /^\d+[smh]$/, `${rule.alert}: for`);
    assert.ok(['warning', 'critical'].includes(rule.labels?.severity), `${rule.alert}: severity`);
    assert.ok(rule.annotations?.summary, `${rule.alert}: summary`);
  }
});

