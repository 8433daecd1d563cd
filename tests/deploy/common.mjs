// Shared by the deploy tests: where the sources and kvd are, rendering Kustomize directories
// offline, and running the real kvd on 127.0.0.1.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const source = process.env.KVD_SOURCE_DIR;
export const kvd = process.env.KVD_BINARY;
if (!source || !kvd) throw new Error('KVD_SOURCE_DIR and KVD_BINARY must be set (CTest sets them)');
export const deployDir = join(source, 'deploy');
export const tinyModel = join(source, 'models/kvd-tiny');

export function parseYamlDocuments(text, what) {
  const objects = [];
  for (const document of parseAllDocuments(text)) {
    if (document.errors.length) throw new Error(`${what}: ${document.errors.join('; ')}`);
    const value = document.toJS();
    if (value !== null) objects.push(value);
  }
  return objects;
}

// kubectl, when installed: `kubectl kustomize` renders without a cluster. An empty kubeconfig
// keeps it from reading any real one.
export const kubectl = (() => {
  const probe = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  return probe.status === 0 ? 'kubectl' : null;
})();

export function kustomize(dir) {
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'kvd-kubeconfig-')), 'config');
  writeFileSync(kubeconfig, '');
  const result = spawnSync(kubectl, ['kustomize', dir], {
    encoding: 'utf8', env: { ...process.env, KUBECONFIG: kubeconfig }, timeout: 60_000,
  });
  if (result.status !== 0) throw new Error(`kubectl kustomize ${dir}:\n${result.stderr}`);
  return parseYamlDocuments(result.stdout, dir);
}

// A scratch copy of deploy/k8s, for variants the docs describe (kustomize loads no file
// from outside its directory tree, so variants are edited copies).
export function copyOfK8s() {
  const dir = mkdtempSync(join(tmpdir(), 'kvd-k8s-'));
  cpSync(join(deployDir, 'k8s'), dir, { recursive: true });
  return dir;
}

// Starts `kvd serve ARGS` on 127.0.0.1, port 0; resolves once it logs its address.
export function startKvd(args, env = {}) {
  const child = spawn(kvd, ['serve', ...args, '--host', '127.0.0.1', '--port', '0'], {
    env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  let logs = '';
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const started = new Promise((resolve, reject) => {
    child.stderr.on('data', (data) => {
      logs += data;
      const match = /serving \S+ on http:\/\/[^\s:/"]+:(\d+)/.exec(logs);
      if (match) resolve(Number(match[1]));
    });
    exited.then(({ code, signal }) => reject(new Error(`kvd exited (${code ?? signal}):\n${logs}`)));
  });
  return started.then((port) => ({
    url: `http://127.0.0.1:${port}`,
    logs: () => logs,
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  }));
}
