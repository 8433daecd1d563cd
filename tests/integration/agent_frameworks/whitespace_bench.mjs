// How many replies of the agent frameworks' cases (cases.mjs) parse and validate within 200
// tokens, with constrained JSON compact (kvd's default) and with any whitespace
// (`structured_outputs.disable_any_whitespace: false`), on the bundled model and on random
// weights of its shape. Not a test: it prints counts. Run from the build tree's copy, where the
// npm packages are installed (the test's setup installs them):
//   cd build/tests/integration/agent_frameworks/npm && KVD_BINARY=../../../../kvd \
//     KVD_SOURCE_DIR=$PWD/../../../../.. KVD_MAKE_RANDOM_MODEL=../../../../make_random_model \
//     node whitespace_bench.mjs [seeds]
import { startKvd, tinyModelVariant } from './kvd_process.mjs';
import { frameworkCases, overSeeds } from './cases.mjs';

const seeds = Number(process.argv[2] ?? 200);
const modes = { compact: {}, 'any whitespace': { structured_outputs: { disable_any_whitespace: false } } };
console.log(`| model | case | compact | any whitespace |`);
console.log(`|---|---|---:|---:|`);
for (const [variant, randomSeed] of [['bundled', undefined], ['random weights', 23]]) {
  const server = await startKvd({
    modelDir: tinyModelVariant({ templateFile: 'hermes_tools.jinja', randomSeed }) });
  try {
    const counts = {};
    let example = '';
    for (const [mode, extraBody] of Object.entries(modes)) {
      const cases = frameworkCases(server.baseURL, extraBody);
      for (const [name, run] of Object.entries(cases)) {
        const verdicts = await overSeeds(seeds, run);
        counts[name] ??= {};
        counts[name][mode] = verdicts.filter((verdict) => verdict.ok).length;
        example ||= verdicts.find((verdict) => !verdict.ok)?.why ?? '';
      }
    }
    for (const [name, byMode] of Object.entries(counts)) {
      console.log(`| ${variant} | ${name} | ${byMode.compact} / ${seeds} | ` +
                  `${byMode['any whitespace']} / ${seeds} |`);
    }
    if (example) console.error(`${variant}, a failure: ${example}`);
  } finally {
    await server.stop();
  }
}
