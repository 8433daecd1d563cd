// Writes the bundled model's benchmark documents and questions as JSON Lines (the form of a
// model's question set: {"id", "doc", "queries": [{"key", "prompt", "answer"}]}), for
// `kvd bench --speculative --questions FILE`.
//   node bench/quality/questions_jsonl.mjs [DOCUMENTS] [QUESTIONS] [SEED] > questions.jsonl
import { BenchDocument } from './documents.mjs';

const [documents = 50, questions = 3, seed = 20261129] = process.argv.slice(2).map(Number);
for (let i = 0; i < documents; ++i) {
  const doc = BenchDocument(seed, i, 300, 1000, questions);
  const queries = doc.questions.map(({ key, value }) => ({ key, prompt: `Q:${key}`, answer: value }));
  process.stdout.write(`${JSON.stringify({ id: i, doc: doc.text, queries })}\n`);
}
