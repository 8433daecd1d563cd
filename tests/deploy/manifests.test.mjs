// deploy/k8s: every overlay renders offline with `kubectl kustomize`; every rendered object
// validates against its Kubernetes (or CRD) schema; the objects agree with each other and with
// kvd's configuration (names, ports, probes, drain, keys); and each rendered configuration
// starts the real kvd.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import {
  copyOfK8s, deployDir, kubectl, kustomize, parseYamlDocuments, startKvd, tinyModel,
} from './common.mjs';

const k8s = join(deployDir, 'k8s');
const skip = kubectl ? false : 'kubectl is not installed: Kustomize rendering is skipped';

// The renders under test: the three overlays, the base, and the variants the docs describe.
function renders() {
  const list = [
    ['base', join(k8s, 'base')],
    ['cpu', join(k8s, 'overlays/cpu')],
    ['gpu', join(k8s, 'overlays/gpu')],
    ['monitoring', join(k8s, 'overlays/monitoring')],
    ['documents', join(k8s, 'overlays/documents')],
    ['shared-documents', join(k8s, 'overlays/shared-documents')],
  ];
  // overlays/monitoring with the HPA instead of KEDA (deploy/k8s/README.md).
  const hpa = copyOfK8s();
  const hpaKustomization = join(hpa, 'overlays/monitoring/kustomization.yaml');
  const text = readFileSync(hpaKustomization, 'utf8');
  assert.match(text, /^ {2}- scaledobject\.yaml$/m);
  writeFileSync(hpaKustomization, text.replace(/^ {2}- scaledobject\.yaml$/m, '  - hpa.yaml'));
  list.push(['monitoring with hpa.yaml', join(hpa, 'overlays/monitoring')]);
  // overlays/cpu with the optional gRPC port.
  const grpc = copyOfK8s();
  const cpuKustomization = join(grpc, 'overlays/cpu/kustomization.yaml');
  writeFileSync(cpuKustomization, readFileSync(cpuKustomization, 'utf8') +
    'components:\n  - ../../components/grpc\n');
  list.push(['cpu with components/grpc', join(grpc, 'overlays/cpu')]);
  return list.map(([name, dir]) => ({ name, objects: kustomize(dir) }));
}

async function modelClass(apiVersion, kind) {
  const [group] = apiVersion.includes('/') ? apiVersion.split('/') : [''];
  const packages = {
    'keda.sh': '@kubernetes-models/keda',
    'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
    'gateway.networking.k8s.io': '@kubernetes-models/gateway-api',
  };
  const module = await import(`${packages[group] ?? 'kubernetes-models'}/${apiVersion}/${kind}`);
  return module[kind];
}

const find = (objects, kind, name) =>
  objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
const matches = (selector, labels) =>
  Object.entries(selector).every(([key, value]) => labels?.[key] === value);

// The InferencePool CRD has no model package: its required fields, by hand (v1 schema).
function checkInferencePool(pool) {
  assert.equal(pool.apiVersion, 'inference.networking.k8s.io/v1');
  assert.ok(pool.metadata?.name, 'InferencePool: metadata.name');
  const { selector, targetPorts, endpointPickerRef } = pool.spec ?? {};
  assert.ok(selector?.matchLabels && Object.keys(selector.matchLabels).length > 0,
    'InferencePool: spec.selector.matchLabels');
  assert.ok(Array.isArray(targetPorts) && targetPorts.length >= 1 && targetPorts.length <= 8,
    'InferencePool: spec.targetPorts (1 to 8)');
  for (const port of targetPorts) assert.ok(Number.isInteger(port.number), 'targetPorts[].number');
  assert.ok(endpointPickerRef?.name, 'InferencePool: spec.endpointPickerRef.name');
  assert.ok(Number.isInteger(endpointPickerRef.port?.number),
    'InferencePool: spec.endpointPickerRef.port.number (required for a Service)');
  assert.ok([undefined, 'FailOpen', 'FailClose'].includes(endpointPickerRef.failureMode));
}

// Hand checks of the CRD objects' fields that matter, beyond their schemas.
function checkScaledObject(scaled, statefulSet) {
  assert.equal(scaled.spec.scaleTargetRef.kind, 'StatefulSet');
  assert.equal(scaled.spec.scaleTargetRef.name, statefulSet.metadata.name);
  assert.ok(scaled.spec.minReplicaCount >= 1, 'a cold start loads a model: never scale to 0');
  assert.ok(scaled.spec.maxReplicaCount >= scaled.spec.minReplicaCount);
  assert.ok(scaled.spec.triggers.length >= 1);
  for (const trigger of scaled.spec.triggers) {
    assert.equal(trigger.type, 'prometheus');
    for (const key of ['serverAddress', 'query', 'threshold']) {
      assert.equal(typeof trigger.metadata[key], 'string', `trigger metadata.${key}`);
    }
    assert.match(trigger.metadata.query, /vllm:num_requests_waiting\{[^}]*job="kvd"/);
    assert.match(trigger.metadata.query, new RegExp(`namespace="${scaled.metadata.namespace}"`));
    assert.ok(Number(trigger.metadata.threshold) > 0);
  }
}

function checkServiceMonitor(monitor, objects) {
  assert.ok(monitor.spec.endpoints.length >= 1);
  const services = objects.filter((o) => o.kind === 'Service' &&
    o.metadata.namespace === monitor.metadata.namespace &&
    matches(monitor.spec.selector.matchLabels, o.metadata.labels));
  assert.deepEqual(services.map((s) => s.metadata.name), ['kvd'],
    'the ServiceMonitor selects exactly the ClusterIP Service (the headless one would double every target)');
  for (const endpoint of monitor.spec.endpoints) {
    assert.equal(endpoint.path, '/metrics');
    assert.ok(services[0].spec.ports.some((p) => p.name === endpoint.port), `port ${endpoint.port}`);
  }
  assert.equal(services[0].metadata.labels[monitor.spec.jobLabel], 'kvd',
    'job="kvd", which the KEDA query and the alerting rules select');
}

// What every kvd render must hold together; returns the pieces for more specific checks.
function checkKvdObjects(objects) {
  const statefulSet = find(objects, 'StatefulSet', 'kvd');
  assert.ok(statefulSet, 'the StatefulSet kvd');
  for (const o of objects) assert.equal(o.metadata.namespace, 'kvd', `${o.kind} ${o.metadata.name}: namespace`);
  const pod = statefulSet.spec.template;
  const podLabels = pod.metadata.labels;
  assert.ok(matches(statefulSet.spec.selector.matchLabels, podLabels));
  const [container] = pod.spec.containers;

  // The configuration: a generated ConfigMap mounted at /etc/kvd.
  const configVolume = pod.spec.volumes.find((v) => v.configMap);
  const configMap = find(objects, 'ConfigMap', configVolume.configMap.name);
  assert.ok(configMap, `ConfigMap ${configVolume.configMap.name} exists`);
  assert.ok(container.volumeMounts.some((m) => m.name === configVolume.name &&
    m.mountPath === '/etc/kvd' && m.readOnly));
  const config = parse(configMap.data['config.yaml']);

  // Ports: the container's `http` is kvd's server.port; both Services reach it.
  const http = container.ports.find((p) => p.name === 'http');
  assert.equal(http.containerPort, config.server.port);
  const headless = find(objects, 'Service', statefulSet.spec.serviceName);
  assert.equal(headless?.spec.clusterIP, 'None', 'serviceName names a headless Service');
  const clusterIp = find(objects, 'Service', 'kvd');
  assert.notEqual(clusterIp.spec.clusterIP, 'None');
  for (const service of [headless, clusterIp]) {
    assert.ok(matches(service.spec.selector, podLabels), `${service.metadata.name} selects the pods`);
    assert.ok(service.spec.ports.some((p) => p.name === 'http' && p.targetPort === 'http'));
  }
  const pdb = find(objects, 'PodDisruptionBudget', 'kvd');
  assert.ok(matches(pdb.spec.selector.matchLabels, podLabels));
  assert.equal(pdb.spec.maxUnavailable, 1);

  // Probes: /health for start and liveness, /ready for readiness; a start budget that loads
  // a model (at least 5 minutes).
  const { startupProbe, readinessProbe, livenessProbe } = container;
  assert.equal(startupProbe.httpGet.path, '/health');
  assert.equal(livenessProbe.httpGet.path, '/health');
  assert.equal(readinessProbe.httpGet.path, '/ready');
  for (const probe of [startupProbe, readinessProbe, livenessProbe]) assert.equal(probe.httpGet.port, 'http');
  const startBudget = (startupProbe.initialDelaySeconds ?? 0) +
    startupProbe.periodSeconds * startupProbe.failureThreshold;
  assert.ok(startBudget >= 300, `startup budget ${startBudget} s`);

  // Drain: the grace period covers preStop, kvd's drain and a margin to exit.
  const preStop = container.lifecycle.preStop.exec.command;
  assert.equal(preStop[0], 'sleep');
  const drain = config.server.drain_timeout_seconds ?? 30;
  assert.ok(pod.spec.terminationGracePeriodSeconds >= Number(preStop[1]) + drain + 5,
    `grace ${pod.spec.terminationGracePeriodSeconds} s < preStop ${preStop[1]} + drain ${drain} + 5`);

  // Storage: one claim per replica at /data, which is store.data_dir.
  const claim = statefulSet.spec.volumeClaimTemplates.find((c) => c.metadata.name === 'data');
  assert.ok(claim?.spec.resources.requests.storage);
  assert.ok(container.volumeMounts.some((m) => m.name === 'data' && m.mountPath === '/data'));
  assert.equal(config.store.data_dir, '/data');

  // Security: non-root, read-only root filesystem, no capabilities, no token.
  assert.equal(pod.spec.securityContext.runAsNonRoot, true);
  assert.equal(pod.spec.securityContext.runAsUser, 10001);
  assert.equal(pod.spec.automountServiceAccountToken, false);
  assert.equal(container.securityContext.readOnlyRootFilesystem, true);
  assert.equal(container.securityContext.allowPrivilegeEscalation, false);
  assert.deepEqual(container.securityContext.capabilities.drop, ['ALL']);
  assert.ok(container.volumeMounts.some((m) => m.mountPath === '/tmp'), 'a writable /tmp');

  // Tenants' keys: every key_env is a key of the Secret the container takes its env from.
  const secretName = container.envFrom.find((e) => e.secretRef).secretRef.name;
  const secret = find(objects, 'Secret', secretName);
  assert.ok(secret, `Secret ${secretName} exists`);
  const env = Object.fromEntries(Object.entries(secret.data ?? {})
    .map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]));
  for (const tenant of config.tenants ?? []) {
    if (tenant.key_env) assert.ok(env[tenant.key_env], `Secret has ${tenant.key_env}`);
  }
  // Single variables from other Secrets (store.remote.password_env).
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    if (!ref) continue;
    const source = find(objects, 'Secret', ref.name);
    assert.ok(source?.data?.[ref.key], `Secret ${ref.name} has ${ref.key}`);
    env[variable.name] = Buffer.from(source.data[ref.key], 'base64').toString('utf8');
  }
  if (config.store.remote?.password_env) {
    assert.ok(env[config.store.remote.password_env], 'store.remote.password_env is set');
  }

  // The replica's name is the pod's (downward API), so document ids name their replica.
  const replicaVariable = container.env?.find((e) => e.name === config.store.replica_env);
  assert.equal(replicaVariable?.valueFrom?.fieldRef?.fieldPath, 'metadata.name',
    'store.replica_env names a variable holding the pod name');
  env[config.store.replica_env] = `${statefulSet.metadata.name}-0`;
  return { statefulSet, container, config, env, podLabels };
}

test('every overlay renders and validates', { skip }, async (t) => {
  const all = renders();
  for (const { name, objects } of all) {
    await t.test(name, async () => {
      for (const object of objects) {
        const Model = await modelClass(object.apiVersion, object.kind);
        assert.ok(Model, `a schema for ${object.apiVersion} ${object.kind}`);
        assert.doesNotThrow(() => new Model(object).validate(),
          `${object.kind} ${object.metadata.name} in ${name}`);
      }
      const { statefulSet, container, config } = checkKvdObjects(objects);
      const limits = container.resources?.limits ?? {};
      if (name.startsWith('cpu')) {
        assert.deepEqual(container.resources.requests.cpu, limits.cpu, 'Guaranteed QoS');
        assert.deepEqual(container.resources.requests.memory, limits.memory, 'Guaranteed QoS');
        assert.deepEqual(container.args, ['--threads', limits.cpu], '--threads is the CPU limit');
        assert.equal(container.image, 'kvd:cpu');
      }
      if (name === 'gpu' || name.startsWith('monitoring')) {
        assert.equal(limits['nvidia.com/gpu'], 1);
        assert.ok(statefulSet.spec.template.spec.tolerations.some((x) => x.key === 'nvidia.com/gpu'));
        assert.ok(statefulSet.spec.template.spec.nodeSelector);
        assert.equal(container.image, 'kvd:cuda');
      }
      if (name.startsWith('monitoring')) {
        checkServiceMonitor(find(objects, 'ServiceMonitor'), objects);
        const scaled = find(objects, 'ScaledObject');
        const hpa = find(objects, 'HorizontalPodAutoscaler');
        assert.ok(!!scaled !== !!hpa, 'exactly one autoscaler');
        if (scaled) checkScaledObject(scaled, statefulSet);
        if (hpa) {
          assert.equal(hpa.spec.scaleTargetRef.name, statefulSet.metadata.name);
          assert.equal(hpa.spec.metrics[0].pods.metric.name, 'vllm_num_requests_waiting');
        }
      }
      if (name.includes('grpc')) {
        const grpcPort = container.ports.find((p) => p.name === 'grpc');
        assert.ok(grpcPort);
        assert.equal(config.server.grpc_port, grpcPort.containerPort,
          'kvd serves gRPC on the container port');
        for (const service of objects.filter((o) => o.kind === 'Service')) {
          assert.ok(service.spec.ports.some((p) => p.name === 'grpc' && p.targetPort === 'grpc'));
        }
      }
    });
  }
});

test('the example InferencePool and HTTPRoute select kvd pods', { skip }, async () => {
  const file = join(k8s, 'inference-gateway/inferencepool.yaml');
  const objects = parseYamlDocuments(readFileSync(file, 'utf8'), file);
  const pool = find(objects, 'InferencePool');
  checkInferencePool(pool);
  const route = find(objects, 'HTTPRoute');
  const HTTPRoute = await modelClass(route.apiVersion, route.kind);
  assert.doesNotThrow(() => new HTTPRoute(route).validate());
  assert.ok(route.spec.rules.some((r) => r.backendRefs.some((b) =>
    b.kind === 'InferencePool' && b.name === pool.metadata.name)));
  const { podLabels, config } = checkKvdObjects(kustomize(join(k8s, 'overlays/gpu')));
  assert.ok(matches(pool.spec.selector.matchLabels, podLabels), 'the pool selects the kvd pods');
  assert.ok(pool.spec.targetPorts.some((p) => p.number === config.server.port));
});

test('overlays/shared-documents gives every replica the one Redis, which no kvd Service selects', { skip }, () => {
  const objects = kustomize(join(k8s, 'overlays/shared-documents'));
  const { statefulSet, config, container } = checkKvdObjects(objects);
  assert.ok(statefulSet.spec.replicas >= 2);
  const redis = find(objects, 'StatefulSet', 'kvd-redis');
  assert.ok(redis, 'a Redis StatefulSet');
  const redisLabels = redis.spec.template.metadata.labels;
  const url = new URL(config.store.remote.url);
  assert.equal(url.protocol, 'redis:');
  const service = find(objects, 'Service', url.hostname);
  assert.ok(service, `store.remote.url names the Service ${url.hostname}`);
  assert.ok(matches(service.spec.selector, redisLabels), 'which selects the Redis pod');
  assert.ok(service.spec.ports.some((p) => p.port === Number(url.port)));
  for (const other of objects.filter((o) => o.kind === 'Service' && o !== service)) {
    assert.ok(!matches(other.spec.selector, redisLabels), `${other.metadata.name} leaves Redis alone`);
  }
  // One password for both: Redis's --requirepass and kvd's password_env come from one Secret key.
  const [redisContainer] = redis.spec.template.spec.containers;
  const redisPassword = redisContainer.env.find((e) => e.name === 'REDIS_PASSWORD').valueFrom.secretKeyRef;
  const kvdPassword = container.env.find((e) => e.name === config.store.remote.password_env)
    .valueFrom.secretKeyRef;
  assert.deepEqual(kvdPassword, redisPassword);
  assert.ok(redisContainer.args.includes('$(REDIS_PASSWORD)'));
  // Durable and never evicting: what Redis acknowledged is on its disk and stays there.
  const arg = (name) => redisContainer.args[redisContainer.args.indexOf(name) + 1];
  assert.equal(arg('--appendonly'), 'yes');
  assert.equal(arg('--appendfsync'), 'always');
  assert.equal(arg('--maxmemory-policy'), 'noeviction');
  assert.ok(redis.spec.volumeClaimTemplates.some((c) => c.metadata.name === 'data'));
});

test('overlays/documents routes each replica\'s header to its own pod', { skip }, async () => {
  const objects = kustomize(join(k8s, 'overlays/documents'));
  const { statefulSet } = checkKvdObjects(objects);
  const route = find(objects, 'HTTPRoute');
  const replicas = statefulSet.spec.replicas;
  assert.ok(replicas >= 2);
  const headerRules = route.spec.rules.filter((r) => r.matches.some((m) => m.headers?.length));
  assert.equal(headerRules.length, replicas, 'one rule per replica');
  for (let i = 0; i < replicas; ++i) {
    const pod = `${statefulSet.metadata.name}-${i}`;
    const service = find(objects, 'Service', pod);
    assert.ok(service, `a Service for ${pod}`);
    assert.deepEqual(service.spec.selector, { 'statefulset.kubernetes.io/pod-name': pod,
      'app.kubernetes.io/name': 'kvd', 'app.kubernetes.io/instance': 'kvd' });
    const rule = headerRules.find((r) => r.matches.some((m) =>
      m.headers.some((h) => h.name.toLowerCase() === 'x-kvd-replica' && h.value === pod)));
    assert.ok(rule, `a rule for X-Kvd-Replica: ${pod}`);
    assert.deepEqual(rule.backendRefs.map((b) => [b.name, b.port]),
      [[pod, service.spec.ports[0].port]]);
  }
  const fallback = route.spec.rules.find((r) => r.matches.every((m) => !m.headers?.length));
  assert.deepEqual(fallback.backendRefs.map((b) => b.name), ['kvd'], 'the rest: any ready pod');
});

test('each rendered configuration starts kvd', { skip }, async (t) => {
  for (const overlay of ['cpu', 'gpu', 'monitoring', 'documents', 'shared-documents']) {
    await t.test(overlay, async () => {
      const { config, env } = checkKvdObjects(kustomize(join(k8s, 'overlays', overlay)));
      // This machine stands in for the pod: the bundled model on the CPU backend, a small KV
      // cache, a scratch data directory; every other key as rendered.
      config.scheduler = { ...config.scheduler, kv_cache_memory_fraction: 0, kv_cache_bytes: '64MiB' };
      const dir = mkdtempSync(join(tmpdir(), 'kvd-deploy-config-'));
      writeFileSync(join(dir, 'config.yaml'), stringify(config));
      const server = await startKvd(['--config', join(dir, 'config.yaml'), '--model', tinyModel,
        '--backend', 'cpu', '--threads', '1', '--data-dir', join(dir, 'data')], env);
      try {
        assert.equal((await fetch(`${server.url}/ready`)).status, 200);
        const key = env[config.tenants[0].key_env];
        const models = await fetch(`${server.url}/v1/models`, { headers: { Authorization: `Bearer ${key}` } });
        assert.equal(models.status, 200, 'the Secret\'s key authenticates');
        const anonymous = await fetch(`${server.url}/v1/models`);
        assert.equal(anonymous.status, 401, 'authentication is on');
      } finally {
        assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.logs());
      }
    });
  }
});

test('the configuration baked into the images starts kvd', async () => {
  const config = parse(readFileSync(join(deployDir, 'docker/config.yaml'), 'utf8'));
  assert.equal(config.model.path, '/opt/kvd/models/kvd-tiny');
  assert.equal(config.store.data_dir, '/data');
  assert.equal(config.server.port, 8000);
  const dir = mkdtempSync(join(tmpdir(), 'kvd-deploy-docker-'));
  const server = await startKvd(['--config', join(deployDir, 'docker/config.yaml'),
    '--model', tinyModel, '--threads', '1', '--data-dir', join(dir, 'data')]);
  try {
    assert.equal((await fetch(`${server.url}/ready`)).status, 200);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.logs());
  }
});
