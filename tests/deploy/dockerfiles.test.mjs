// deploy/docker: both Dockerfiles lint clean with dockerfile-utils (which reports findings but
// exits 0, hence the check of its output), follow the documented shape (CI's build steps, a
// runtime stage with only runtime libraries, non-root, /data volume, port 8000, kvd serve as
// entrypoint), copy only what the build context (the repository root, less .dockerignore)
// holds, and install every runtime library the kvd binary links.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DockerfileParser } from 'dockerfile-ast';
import { validate, ValidationSeverity } from 'dockerfile-utils';
import { kvd, source } from './common.mjs';

const strict = Object.fromEntries(['deprecatedMaintainer', 'directiveCasing', 'emptyContinuationLine',
  'instructionCasing', 'instructionCmdMultiple', 'instructionEntrypointMultiple',
  'instructionHealthcheckMultiple', 'instructionJSONInSingleQuotes', 'instructionWorkdirRelative']
  .map((setting) => [setting, ValidationSeverity.ERROR]));

// .dockerignore patterns as Docker reads them (Go filepath.Match plus `**`); a path is out of
// the context when it or a folder above it matches.
const ignorePatterns = readFileSync(join(source, '.dockerignore'), 'utf8').split('\n')
  .map((line) => line.trim()).filter((line) => line && !line.startsWith('#'))
  .map((pattern) => {
    assert.ok(!pattern.startsWith('!'), 'exceptions are not used');
    const body = pattern.replace(/^\/+|\/+$/g, '').split('**/').map((part) =>
      part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]'))
      .join('(?:.*/)?');
    return new RegExp(`^${body}$`);
  });
const ignored = (path) => path.split('/').some((_, i, parts) =>
  ignorePatterns.some((re) => re.test(parts.slice(0, i + 1).join('/'))));

const text = (instruction) => (instruction.getArgumentsContent() ?? '')
  .replace(/\\\r?\n/g, ' ').replace(/\s+/g, ' ').trim();

function stages(file) {
  const dockerfile = DockerfileParser.parse(readFileSync(file, 'utf8'));
  const result = [];
  for (const instruction of dockerfile.getInstructions()) {
    if (instruction.getKeyword() === 'FROM') result.push({ from: instruction, instructions: [] });
    else if (result.length) result[result.length - 1].instructions.push(instruction);
  }
  return { dockerfile, stages: result };
}

const args = (dockerfile) => Object.fromEntries(dockerfile.getInstructions()
  .filter((i) => i.getKeyword() === 'ARG').map((i) => text(i).split('=')));

function checkShape(file, { buildImage, cmakeFlags }) {
  const { dockerfile, stages: [build, runtime, ...rest] } = stages(file);
  assert.equal(rest.length, 0, 'two stages');
  assert.equal(build.from.getBuildStage(), 'build');
  assert.equal(runtime.from.getBuildStage(), 'runtime');
  assert.match(build.from.getImage(), buildImage);

  const runs = build.instructions.filter((i) => i.getKeyword() === 'RUN').map(text);
  assert.ok(runs.some((r) => r.startsWith('scripts/bootstrap')), 'the build stage runs scripts/bootstrap');
  const configure = `cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release${cmakeFlags}`;
  assert.ok(runs.some((r) => r.includes(configure)), `the build stage runs ${configure}`);
  assert.ok(runs.some((r) => r.includes('cmake --build build --target kvd')));

  const last = (keyword) => runtime.instructions.filter((i) => i.getKeyword() === keyword).map(text).at(-1);
  const user = last('USER');
  assert.ok(user && !/^(root|0)(:|$)/.test(user), `runs as a non-root user (${user})`);
  assert.equal(last('EXPOSE'), '8000');
  assert.deepEqual(JSON.parse(last('VOLUME')), ['/data']);
  assert.deepEqual(JSON.parse(last('ENTRYPOINT')), ['kvd', 'serve', '--config', '/etc/kvd/config.yaml']);
  assert.equal(last('HEALTHCHECK'), undefined, 'no HEALTHCHECK: Kubernetes probes the pods');
  const copies = runtime.instructions.filter((i) => i.getKeyword() === 'COPY').map((copy) =>
    (copy.getFromFlag() ? `--from=${copy.getFromFlag().getValue()} ` : '') + text(copy));
  assert.ok(copies.includes('--from=build /src/build/kvd /usr/local/bin/kvd'));
  assert.ok(copies.includes('models/kvd-tiny /opt/kvd/models/kvd-tiny'), 'the bundled model');
  assert.ok(copies.includes('deploy/docker/config.yaml /etc/kvd/config.yaml'));
  assert.ok(!runtime.instructions.some((i) => i.getKeyword() === 'RUN' && /-dev\b|scripts\/bootstrap/.test(text(i))),
    'no -dev packages in the runtime stage');

  // What COPY takes from the context exists there and is not excluded by .dockerignore.
  for (const copy of dockerfile.getCOPYs()) {
    if (copy.getFromFlag()) continue;
    const sources = copy.getArguments().map((a) => a.getValue()).slice(0, -1);
    for (const path of sources) {
      if (path === '.') continue;
      assert.ok(existsSync(join(source, path)), `COPY ${path}: in the repository`);
      assert.ok(!ignored(path), `COPY ${path}: not excluded by .dockerignore`);
    }
  }
  return { dockerfile, build, runtime, args: args(dockerfile) };
}

for (const name of ['Dockerfile.cpu', 'Dockerfile.cuda']) {
  test(`${name} lints clean with dockerfile-utils`, () => {
    const diagnostics = validate(readFileSync(join(source, 'deploy/docker', name), 'utf8'), strict);
    assert.deepEqual(diagnostics.map((d) => `${d.range.start.line + 1}: ${d.message}`), []);
  });
}

test('dockerfile-utils reports what it finds (its exit status does not)', () => {
  const diagnostics = validate('FROM debian:12\nEXPOSE port\nFOO bar\n', strict);
  assert.equal(diagnostics.length, 2);
});

test('the build context keeps sources and drops build trees', () => {
  for (const path of ['build', 'build-asan', 'build/kvd', 'tests/deploy/node_modules', 'node_modules/x', '.git']) {
    assert.ok(ignored(path), `${path} is excluded`);
  }
  for (const path of ['scripts/bootstrap', 'models/kvd-tiny', 'deploy/docker/config.yaml', 'server/main.cc',
    'tests/unit/server/build_test.cc']) {
    assert.ok(!ignored(path), `${path} is in the context`);
  }
});

test('Dockerfile.cpu: Debian 12, CI\'s build, Debian runtime packages for every linked library', () => {
  const { runtime } = checkShape(join(source, 'deploy/docker/Dockerfile.cpu'),
    { buildImage: /^debian:12$/, cmakeFlags: '' });
  assert.match(runtime.from.getImage(), /^debian:12(-slim)?$/);
  const install = runtime.instructions.map(text).find((r) => r.includes('apt-get install'));
  const listed = new Set(install.split(' ').filter((word) => /^lib[\w.+-]+$/.test(word)));

  // The packages that own the libraries the kvd under test links (CUDA's excepted: it is
  // not in this image) must be listed, be in every base image, or come as a dependency.
  const dpkg = spawnSync('dpkg-query', ['--version']);
  if (dpkg.status !== 0) return;  // not a Debian machine: nothing to compare with
  const ldd = spawnSync('ldd', [kvd], { encoding: 'utf8' });
  assert.equal(ldd.status, 0, ldd.stderr);
  const owners = new Set();
  for (const [, path] of ldd.stdout.matchAll(/=> (\/\S+)/g)) {
    if (path.startsWith('/usr/local/cuda')) continue;
    const owner = [path, spawnSync('realpath', [path], { encoding: 'utf8' }).stdout.trim()]
      .map((p) => spawnSync('dpkg-query', ['-S', p], { encoding: 'utf8' }))
      .find((r) => r.status === 0);
    assert.ok(owner, `a package owns ${path}`);
    owners.add(owner.stdout.split(':')[0]);
  }
  // Sanitizer runtimes appear when CI runs this test against its sanitizer build; the image
  // never ships one.
  const sanitizerRuntimes = ['libasan8', 'libubsan1', 'libtsan2', 'liblsan0'];
  const covered = new Set(['libc6', 'libstdc++6', 'libgcc-s1', ...sanitizerRuntimes, ...listed]);
  const queue = [...listed];
  while (queue.length) {
    const depends = spawnSync('dpkg-query', ['-W', '-f=${Depends}', queue.pop()], { encoding: 'utf8' });
    for (const dependency of depends.stdout.split(/[,|]/).map((d) => d.trim().split(/[\s:]/)[0])) {
      if (dependency && !covered.has(dependency)) { covered.add(dependency); queue.push(dependency); }
    }
  }
  const missing = [...owners].filter((owner) => !covered.has(owner));
  assert.deepEqual(missing, [], 'runtime packages for the libraries kvd links');
});

test('Dockerfile.cuda: an NVIDIA CUDA 13 devel image, CI\'s build with CUDA, the runtime image to match', () => {
  const { runtime, args: defaults } = checkShape(join(source, 'deploy/docker/Dockerfile.cuda'),
    { buildImage: /^nvidia\/cuda:\$\{CUDA_VERSION\}-devel-ubuntu24\.04$/, cmakeFlags: ' -DKVD_WITH_CUDA=ON' });
  assert.match(defaults.CUDA_VERSION, /^13\.\d+\.\d+$/);
  assert.equal(runtime.from.getImage(), 'nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04');
});
