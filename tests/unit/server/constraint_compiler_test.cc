// ConstraintCompiler: constraints compiled on its threads, kept ones handed over at once, and
// the refusals that keep one tenant's compiles from taking the threads: a tenant's limit, the
// wait for a thread, the time a compile may take.
#include "server/core/constraint_compiler.h"

#include <condition_variable>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "gtest/gtest.h"
#include "tests/unit/server/tiny_model_test.h"

namespace kvd::server {
namespace {

using Compiled = absl::StatusOr<std::shared_ptr<const structured::Constraint>>;

// A JSON Schema of `properties` string properties, all required: it takes milliseconds to
// compile once it has a few thousand.
structured::ConstraintSpec WideSchema(int properties, const std::string& description) {
  std::string schema =
      absl::StrCat(R"({"type": "object", "description": ")", description, R"(", "properties": {)");
  std::string required;
  for (int i = 0; i < properties; ++i) {
    absl::StrAppend(&schema, i == 0 ? "" : ", ", "\"p", i, R"(": {"type": "string"})");
    absl::StrAppend(&required, i == 0 ? "" : ", ", "\"p", i, "\"");
  }
  absl::StrAppend(&schema, "}, \"required\": [", required, "]}");
  return {.kind = structured::ConstraintSpec::Kind::kJsonSchema, .text = schema};
}

// One compile's result, for the test thread to wait on.
class Result {
 public:
  ConstraintCompiler::Done Receiver() {
    // Notifies holding the lock: the waiter may destroy this as soon as it has the result.
    return [this](Compiled compiled) {
      base::MutexLock lock(mu_);
      compiled_ = std::move(compiled);
      thread_ = std::this_thread::get_id();
      cv_.notify_all();
    };
  }
  Compiled Await() {
    base::MutexLock lock(mu_);
    while (!compiled_) lock.Wait(cv_);
    return *compiled_;
  }
  std::thread::id thread() {
    base::MutexLock lock(mu_);
    return thread_;
  }

 private:
  base::Mutex mu_;
  std::condition_variable cv_;
  std::optional<Compiled> compiled_ ABSL_GUARDED_BY(mu_);
  std::thread::id thread_ ABSL_GUARDED_BY(mu_);
};

class ConstraintCompilerTest : public TinyModelTest {
 protected:
  structured::ConstraintCache cache_{
      structured::TokenTrie::Create(*tokenizer_, config_->eos_token_ids).value()};
};

TEST_F(ConstraintCompilerTest, CompilesOnItsThreadsAndHandsKeptOnesOverAtOnce) {
  ConstraintCompiler compiler(cache_, {});
  const structured::ConstraintSpec spec = WideSchema(20, "first");
  Result first;
  compiler.Compile("a", spec, first.Receiver());
  const Compiled compiled = first.Await();
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_NE(first.thread(), std::this_thread::get_id());

  Result again;
  compiler.Compile("b", spec, again.Receiver());
  EXPECT_EQ(again.thread(), std::this_thread::get_id()) << "a kept constraint waits for nothing";
  EXPECT_EQ(again.Await().value(), *compiled);
  EXPECT_EQ(compiler.stats().seconds.count, 1u);
}

TEST_F(ConstraintCompilerTest, ATenantPastItsLimitIsRefusedAndAnotherIsNot) {
  ConstraintCompiler compiler(cache_, {.threads = 1, .max_per_tenant = 1});
  Result slow, refused, other;
  compiler.Compile("a", WideSchema(3000, "slow"), slow.Receiver());
  compiler.Compile("a", WideSchema(3, "second"), refused.Receiver());
  compiler.Compile("b", WideSchema(3, "other"), other.Receiver());
  EXPECT_EQ(refused.Await().status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.thread(), std::this_thread::get_id());
  EXPECT_TRUE(slow.Await().ok());
  EXPECT_TRUE(other.Await().ok());
  EXPECT_EQ(compiler.stats().refused, 1u);
}

TEST_F(ConstraintCompilerTest, ABurstOfOneConstraintCompilesItOnceWithinTheLimit) {
  ConstraintCompiler compiler(cache_, {.threads = 2, .max_per_tenant = 1});
  const structured::ConstraintSpec spec = WideSchema(3000, "burst");
  std::vector<Result> results(8);
  for (Result& result : results) compiler.Compile("a", spec, result.Receiver());
  const Compiled first = results[0].Await();
  ASSERT_TRUE(first.ok()) << first.status();
  for (Result& result : results) EXPECT_EQ(result.Await().value(), *first);
  EXPECT_EQ(compiler.stats().seconds.count, 1u);
  EXPECT_EQ(compiler.stats().refused, 0u);
}

TEST_F(ConstraintCompilerTest, ACompilePastTheTimeoutIsRefused) {
  // Every compile waits longer than a nanosecond for its thread: refused, to retry.
  ConstraintCompiler compiler(cache_, {.timeout = absl::Nanoseconds(1)});
  Result waited;
  compiler.Compile("a", WideSchema(3, "waited"), waited.Receiver());
  EXPECT_EQ(waited.Await().status().code(), absl::StatusCode::kResourceExhausted);
  // One that takes longer than its budget is the request's fault, and is not kept.
  const structured::ConstraintSpec spec = WideSchema(50, "slow");
  EXPECT_EQ(cache_.Get(spec, absl::Nanoseconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache_.Find(spec), nullptr);
  EXPECT_TRUE(cache_.Get(spec).ok());
  EXPECT_NE(cache_.Find(spec), nullptr);
}

}  // namespace
}  // namespace kvd::server
