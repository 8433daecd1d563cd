// GET /health beside a real scheduler thread whose step is wedged on purpose: healthy while it
// steps or idles, however long; 503 `scheduler_stalled` once it has had work past the timeout
// without completing a step; healthy again when the step completes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "engine/model.h"
#include "kernels/backend.h"
#include "scheduler/scheduler.h"
#include "server/openai/openai_routes.h"
#include "tests/support/stalling_backend.h"
#include "tests/unit/engine/reference_model.h"
#include "tests/unit/scheduler/fake_clock.h"
#include "text/tokenizer.h"

namespace kvd::server {
namespace {

using ::testing::HasSubstr;

TEST(HealthTest, AStepWedgedPastTheTimeoutIsUnhealthyUntilItCompletes) {
  scheduler::testing::FakeClock clock;
  test_support::StallingBackend backend(*kernels::CreateBackend("cpu", {.num_threads = 1}));
  const auto dir = engine::testing::BundledModelDir();
  auto model = engine::Model::Load(dir, backend);
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = text::Tokenizer::FromFile(dir / "tokenizer.json");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  scheduler::SchedulerConfig config;
  config.kv_cache_bytes = size_t{16} << 20;
  auto scheduler = scheduler::Scheduler::Create(**model, tokenizer->get(), config, clock);
  ASSERT_TRUE(scheduler.ok()) << scheduler.status();
  ServingContext context;
  context.scheduler = scheduler->get();
  context.health_step_timeout = absl::Seconds(60);
  (*scheduler)->Start();

  EXPECT_EQ(HealthResponse(context).status, 200);
  clock.Advance(absl::Hours(1));  // idle, however long
  EXPECT_EQ(HealthResponse(context).status, 200);

  backend.StallNextOp();
  scheduler::Request request;
  request.prompt = {1, 2, 3, 4};
  request.sampling.temperature = 0.0f;
  request.max_tokens = 2;
  auto handle = (*scheduler)->Submit(request);
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_TRUE(backend.WaitUntilStalled(std::chrono::seconds(60)));
  clock.Advance(absl::Seconds(60));  // at the timeout, not past it
  EXPECT_EQ((*scheduler)->StalledFor(), absl::Seconds(60));
  EXPECT_EQ(HealthResponse(context).status, 200);
  clock.Advance(absl::Seconds(1));
  const HttpResponse stalled = HealthResponse(context);
  EXPECT_EQ(stalled.status, 503);
  EXPECT_THAT(stalled.body, HasSubstr("scheduler_stalled"));
  EXPECT_THAT(stalled.body, HasSubstr("1m1s without completing a step"));
  EXPECT_EQ((*scheduler)->Metrics().stalled_seconds, 61.0);
  context.health_step_timeout = absl::ZeroDuration();  // 0: never unhealthy
  EXPECT_EQ(HealthResponse(context).status, 200);
  context.health_step_timeout = absl::Seconds(60);

  backend.Release();
  bool ended = false;
  while (!ended) {
    auto event = handle->Next(absl::Seconds(60));
    ASSERT_TRUE(event.has_value());
    ended = event->final;
  }
  (*scheduler)->Stop();
  EXPECT_EQ((*scheduler)->StalledFor(), absl::ZeroDuration());
  EXPECT_EQ(HealthResponse(context).status, 200);
}

}  // namespace
}  // namespace kvd::server
