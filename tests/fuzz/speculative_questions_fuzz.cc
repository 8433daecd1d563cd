// Fuzzes bench::ParseSpeculativeQuestions (the question set `kvd bench --speculative` reads):
// every document it accepts has text and at least one non-empty question.
#include "bench/speculative_questions.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto documents = kvd::bench::ParseSpeculativeQuestions(kvd::fuzz::AsText(data, size), 64);
  if (!documents.ok()) return 0;
  kvd::fuzz::Require(documents->size() <= 64, "more documents than asked for");
  for (const kvd::bench::SpeculativeQuestions& document : *documents) {
    kvd::fuzz::Require(!document.document.empty() && !document.questions.empty(),
                       "a document without text or questions");
    for (const std::string& question : document.questions) {
      kvd::fuzz::Require(!question.empty(), "an empty question");
    }
  }
  return 0;
}
