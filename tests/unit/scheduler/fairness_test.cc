// Weighted-fair admission across tenants, counted in admissions and steps (no clock).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "scheduler/scheduler.h"
#include "tests/unit/scheduler/scheduler_fixture.h"

namespace kvd::scheduler::testing {
namespace {

class FairnessTest : public SchedulerTest {
 protected:
  // Eight sequences per step; prompts of 16 tokens and 4 generated, so slots turn over often.
  static SchedulerConfig Config() {
    SchedulerConfig config = SmallConfig();
    config.max_num_seqs = 8;
    config.max_num_batched_tokens = 64;
    return config;
  }

  RequestHandle SubmitFor(Scheduler& scheduler, const TenantPolicy& tenant, uint32_t seed,
                          int32_t priority = 0) {
    std::mt19937 random(seed);
    Request request = Greedy(RandomPrompt(random, 16), 4);
    request.tenant = tenant;
    request.priority = priority;
    auto handle = scheduler.Submit(std::move(request));
    EXPECT_TRUE(handle.ok()) << handle.status();
    tenant_of_[handle->id()] = tenant.id;
    return *std::move(handle);
  }

  // Steps until idle; returns the tenants in admission order and checks that no step leaves a
  // slot idle while a request waits: fairness must not cost throughput.
  std::vector<std::string> RunRecordingAdmissions(Scheduler& scheduler,
                                                  int32_t max_steps = 1 << 20) {
    std::vector<std::string> admitted;
    int32_t outstanding = 0;  // running and waiting before the step, once known
    for (int32_t step = 0; step < max_steps && scheduler.HasWork(); ++step) {
      auto report = scheduler.Step();
      EXPECT_TRUE(report.ok());
      if (step > 0) {
        EXPECT_EQ(report->num_sequences, std::min(Config().max_num_seqs, outstanding))
            << "a slot left idle at step " << step;
      }
      for (uint64_t id : report->admitted) admitted.push_back(tenant_of_.at(id));
      outstanding = report->num_running + report->num_waiting;
    }
    return admitted;
  }

  std::map<uint64_t, std::string> tenant_of_;
};

TEST_F(FairnessTest, SmallTenantIsNotStarvedByAFlood) {
  auto scheduler = NewScheduler(Config());
  std::vector<RequestHandle> handles;
  for (uint32_t i = 0; i < 200; ++i) handles.push_back(SubmitFor(*scheduler, {.id = "a"}, i));
  for (uint32_t i = 0; i < 5; ++i) handles.push_back(SubmitFor(*scheduler, {.id = "b"}, 500 + i));
  const std::vector<std::string> admitted = RunRecordingAdmissions(*scheduler);
  ASSERT_EQ(admitted.size(), 205u);
  // Equal weights: B gets every other admission while it has requests waiting, so its k-th
  // request is admitted by the 2k-th admission overall.
  int32_t b_seen = 0;
  for (size_t i = 0; i < admitted.size() && b_seen < 5; ++i) {
    if (admitted[i] == "b") {
      ++b_seen;
      EXPECT_LE(i + 1, static_cast<size_t>(2 * b_seen)) << "B's request " << b_seen;
    }
  }
  EXPECT_EQ(b_seen, 5);
}

TEST_F(FairnessTest, LateTenantCatchesUpWithinItsShare) {
  auto scheduler = NewScheduler(Config());
  std::vector<RequestHandle> handles;
  for (uint32_t i = 0; i < 200; ++i) handles.push_back(SubmitFor(*scheduler, {.id = "a"}, i));
  std::vector<std::string> admitted = RunRecordingAdmissions(*scheduler, /*max_steps=*/30);
  const size_t before = admitted.size();
  EXPECT_TRUE(std::all_of(admitted.begin(), admitted.end(), [](auto& t) { return t == "a"; }));
  // B arrives after A has been served for 30 steps, with a flood of its own. It starts at A's
  // virtual time rather than at zero, so it gets its share from now on, not a burst that would
  // repay A's past service by starving A.
  for (uint32_t i = 0; i < 50; ++i) handles.push_back(SubmitFor(*scheduler, {.id = "b"}, 500 + i));
  const std::vector<std::string> rest = RunRecordingAdmissions(*scheduler);
  admitted.insert(admitted.end(), rest.begin(), rest.end());
  int32_t b_seen = 0;
  for (size_t i = before; i < admitted.size() && b_seen < 5; ++i) {
    if (admitted[i] == "b") {
      ++b_seen;
      EXPECT_LE(i - before + 1, static_cast<size_t>(2 * b_seen)) << "B's request " << b_seen;
    }
  }
  EXPECT_EQ(b_seen, 5);
  const auto a_share = std::count(admitted.begin() + before, admitted.begin() + before + 20, "a");
  EXPECT_GE(a_share, 8) << "A kept about half of the admissions after B arrived";
}

TEST_F(FairnessTest, AdmissionsFollowWeights) {
  auto scheduler = NewScheduler(Config());
  std::vector<RequestHandle> handles;
  for (uint32_t i = 0; i < 100; ++i) {
    handles.push_back(SubmitFor(*scheduler, {.id = "heavy", .weight = 3.0}, i));
    handles.push_back(SubmitFor(*scheduler, {.id = "light", .weight = 1.0}, 1000 + i));
  }
  const std::vector<std::string> admitted = RunRecordingAdmissions(*scheduler);
  ASSERT_EQ(admitted.size(), 200u);
  // Identical requests, so tokens and admissions share alike: 3 to 1, within one request
  // (its 20 tokens) of each tenant's weighted share over the first 80 admissions.
  const auto heavy = std::count(admitted.begin(), admitted.begin() + 80, "heavy");
  EXPECT_GE(heavy, 60 - 2);
  EXPECT_LE(heavy, 60 + 2);
}

TEST_F(FairnessTest, TenantRunningLimitLeavesSlotsToOthers) {
  auto scheduler = NewScheduler(Config());
  std::vector<RequestHandle> handles;
  const TenantPolicy capped{.id = "capped", .max_running_sequences = 2};
  for (uint32_t i = 0; i < 20; ++i) handles.push_back(SubmitFor(*scheduler, capped, i));
  for (uint32_t i = 0; i < 20; ++i) handles.push_back(SubmitFor(*scheduler, {.id = "x"}, 100 + i));
  while (scheduler->HasWork()) {
    ASSERT_TRUE(scheduler->Step().ok());
    const MetricsSnapshot metrics = scheduler->Metrics();
    const auto it = metrics.tenants.find("capped");
    if (it != metrics.tenants.end()) {
      EXPECT_LE(it->second.running, 2);
    }
  }
  for (RequestHandle& handle : handles) {
    Outcome outcome;
    Drain(handle, outcome);
    EXPECT_TRUE(outcome.ended);
  }
}

TEST_F(FairnessTest, BetterPriorityIsAdmittedFirst) {
  SchedulerConfig config = Config();
  config.max_num_seqs = 2;
  auto scheduler = NewScheduler(config);
  std::vector<RequestHandle> handles;
  for (uint32_t i = 0; i < 6; ++i) {
    handles.push_back(SubmitFor(*scheduler, {.id = "a"}, i, /*priority=*/1));
  }
  const RequestHandle& urgent = handles.emplace_back(SubmitFor(*scheduler, {.id = "b"}, 99, 0));
  std::vector<uint64_t> order;
  while (scheduler->HasWork()) {
    auto report = scheduler->Step();
    ASSERT_TRUE(report.ok());
    order.insert(order.end(), report->admitted.begin(), report->admitted.end());
  }
  ASSERT_EQ(order.size(), 7u);
  EXPECT_EQ(order.front(), urgent.id());
}

}  // namespace
}  // namespace kvd::scheduler::testing
