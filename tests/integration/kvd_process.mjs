// `kvd serve` on the bundled model, on loopback with port 0, for the tests written against real
// JavaScript clients (copied beside each of them by kvd_node_tests). KVD_BINARY names the kvd
// under test and KVD_SOURCE_DIR the repository.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Starts kvd with `configLines` as its config file (none when empty) and `args` after the
// usual ones; resolves once it serves HTTP. `logs()` is everything it has written so far;
// `stop()` sends SIGTERM and resolves with its exit code.
export async function startKvd({ configLines = [], args = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'kvd-node-'));
  const config = configLines.length > 0 ? ['--config', join(dir, 'config.yaml')] : [];
  if (configLines.length > 0) writeFileSync(config[1], [...configLines, ''].join('\n'));
  const server = spawn(process.env.KVD_BINARY, [
    'serve', ...config, '--model', join(process.env.KVD_SOURCE_DIR, 'models/kvd-tiny'),
    '--data-dir', join(dir, 'data'), '--host', '127.0.0.1', '--port', '0', ...args]);
  let logs = '';
  const exited = new Promise((resolve) => server.on('exit', resolve));
  const port = await new Promise((resolve, reject) => {
    server.stderr.on('data', (data) => {
      logs += data;
      const match = /serving .* on http:\/\/[^:]+:(\d+)/.exec(logs);
      if (match) resolve(match[1]);
    });
    server.on('exit', (code) => reject(new Error(`kvd exited with ${code}:\n${logs}`)));
  });
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    logs: () => logs,
    stop: () => {
      server.kill('SIGTERM');
      return exited;
    },
  };
}
