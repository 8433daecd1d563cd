// The agent frameworks' structured outputs and forced tool calls (cases.mjs) on the bundled
// model under a hermes tools template and on random weights of its shape (whose output is
// otherwise noise): at temperature 1 within 200 tokens, every reply of 200 seeds parses and
// validates.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startKvd, tinyModelVariant } from './kvd_process.mjs';
import { frameworkCases, overSeeds } from './cases.mjs';

const seeds = 200;

function frameworkTests(variant, randomSeed) {
  describe(variant, () => {
    let server;
    let cases;
    before(async () => {
      server = await startKvd({
        modelDir: tinyModelVariant({ templateFile: 'hermes_tools.jinja', randomSeed }) });
      cases = frameworkCases(server.baseURL);
    });
    after(async () => {
      assert.equal(await server.stop(), 0, server.logs());
    });

    for (const name of Object.keys(frameworkCases('http://127.0.0.1:1/v1'))) {
      test(`${name}: ${seeds} seeds all validate`, async () => {
        const verdicts = await overSeeds(seeds, (seed) => cases[name](seed));
        verdicts.forEach((verdict, seed) => assert.ok(verdict.ok, `seed ${seed}: ${verdict.why}`));
      });
    }
  });
}

frameworkTests('bundled model', undefined);
frameworkTests('random weights', 23);
