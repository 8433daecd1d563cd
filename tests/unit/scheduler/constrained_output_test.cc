// ConstraintWorkers: a constrained output's masks computed on worker threads are the masks its
// matcher gives on the spot, and a token its mask excludes stops it with an error.
#include "scheduler/internal/constrained_output.h"

#include <condition_variable>
#include <memory>
#include <random>
#include <vector>

#include "base/mutex.h"
#include "gtest/gtest.h"
#include "structured/json_schema_grammar.h"
#include "tests/unit/engine/reference_model.h"
#include "text/tokenizer.h"

namespace kvd::scheduler::internal {
namespace {

std::shared_ptr<const structured::Constraint> ListConstraint() {
  static const auto* tokenizer =
      text::Tokenizer::FromFile(engine::testing::BundledModelDir() / "tokenizer.json")
          .value()
          .release();
  static const auto* trie = new std::shared_ptr<const structured::TokenTrie>(
      structured::TokenTrie::Create(*tokenizer, {873, 870}).value());
  return std::make_shared<const structured::Constraint>(
      structured::CompileJsonSchema(
          structured::JsonValue::parse(
              R"({"type": "array", "items": {"type": "string", "maxLength": 6}})"),
          structured::JsonWhitespace::kCompact)
          .value(),
      *trie);
}

// Counts the work that finished, for a test thread to wait on.
class Finished {
 public:
  void Notify() {
    {
      base::MutexLock lock(mu_);
      ++count_;
    }
    cv_.notify_all();
  }
  void AwaitCount(int count) {
    base::MutexLock lock(mu_);
    while (count_ < count) lock.Wait(cv_);
  }

 private:
  base::Mutex mu_;
  std::condition_variable cv_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST(ConstrainedOutputTest, WorkersGiveTheMatchersMasksAlongAWalk) {
  for (const int32_t threads : {0, 1, 3}) {
    SCOPED_TRACE(threads);
    Finished finished;
    ConstraintWorkers workers(threads, [&] { finished.Notify(); });
    const auto constraint = ListConstraint();
    auto output = std::make_shared<ConstrainedOutput>(constraint);
    structured::ConstraintMatcher reference(constraint);
    std::mt19937 random(threads + 1);
    constexpr int32_t kMaxTokens = 40;
    std::optional<int32_t> token;
    for (int32_t step = 0; step < kMaxTokens; ++step) {
      workers.Start("tenant", output, token, kMaxTokens - step);
      if (threads > 0) finished.AwaitCount(step + 1);
      ASSERT_TRUE(output->ready());
      ASSERT_TRUE(output->mask().ok()) << output->mask().status();
      const auto expected = reference.NextTokens(kMaxTokens - step).value();
      const structured::TokenMask& mask = **output->mask();
      std::vector<int32_t> allowed, expected_allowed;
      mask.ForEach([&](int32_t id) { allowed.push_back(id); });
      expected->ForEach([&](int32_t id) { expected_allowed.push_back(id); });
      ASSERT_EQ(allowed, expected_allowed) << "step " << step;
      EXPECT_GE(output->seconds(), 0.0);
      token = allowed[random() % allowed.size()];
      ASSERT_TRUE(reference.Accept(*token).ok());
      if (reference.ended()) break;
    }
  }
}

TEST(ConstrainedOutputTest, ATokenTheMaskExcludesIsAnError) {
  Finished finished;
  ConstraintWorkers workers(1, [&] { finished.Notify(); });
  auto output = std::make_shared<ConstrainedOutput>(ListConstraint());
  workers.Start("tenant", output, std::nullopt, 10);
  finished.AwaitCount(1);
  ASSERT_TRUE(output->ready());
  const structured::TokenMask& first = **output->mask();
  int32_t excluded = 0;
  while (first.allows(excluded)) ++excluded;
  workers.Start("tenant", output, excluded, 9);
  finished.AwaitCount(2);
  ASSERT_TRUE(output->ready());
  EXPECT_EQ(output->mask().status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvd::scheduler::internal
