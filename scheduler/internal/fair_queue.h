// Sequences waiting for admission, per tenant, and the weighted-fair choice of the next one.
// Fairness is over tokens: each tenant's virtual time grows by the tokens computed for it
// divided by its weight, and the tenant with the least virtual time goes next (among equal
// priorities). A tenant that becomes active starts at the current minimum, so idling banks no
// credit. Thread: scheduler.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "scheduler/internal/sequence.h"
#include "scheduler/metrics.h"

namespace kvd::scheduler::internal {

class FairQueue {
 public:
  // Adds a new or preempted sequence.
  void Push(std::unique_ptr<Sequence> sequence);
  // The sequence to admit next, left in the queue; null when none may run: nothing waits, or
  // every waiting tenant is at its running limit.
  Sequence* Next() const;
  // Removes `sequence` (from Next) to run it.
  std::unique_ptr<Sequence> PopForRunning(Sequence* sequence);
  // A running sequence of `tenant` joined the batch without passing through the queue
  // (a completion branched off its parent).
  void AddRunning(const TenantPolicy& tenant);
  // A running sequence of `tenant` left the batch (finished or preempted).
  void RemoveRunning(const std::string& tenant);
  // Accounts `tokens` computed for `tenant` (or work worth as many).
  void Charge(const std::string& tenant, double tokens);
  // Removes and returns the waiting sequences that `predicate` selects.
  std::vector<std::unique_ptr<Sequence>> RemoveIf(
      const std::function<bool(const Sequence&)>& predicate);

  size_t size() const { return size_; }
  // Running and waiting sequences per active tenant.
  std::map<std::string, TenantStats> Gauges() const;
  double virtual_time(const std::string& tenant) const;

 private:
  using Key = std::tuple<int32_t, int64_t, int32_t>;  // Sequence::order()
  struct Tenant {
    double weight = 1.0;
    int32_t max_running = 0;
    double virtual_time = 0.0;
    int32_t running = 0;
    std::map<Key, std::unique_ptr<Sequence>> waiting;
    bool active() const { return running > 0 || !waiting.empty(); }
  };

  // Called before a tenant gains its first running or waiting sequence.
  void Activate(Tenant& tenant);
  // Forgets `name` when it has nothing left and no credit to remember.
  void MaybeForget(const std::string& name);
  double MinActiveVirtualTime() const;

  std::map<std::string, Tenant> tenants_;
  size_t size_ = 0;
  double floor_ = 0.0;  // virtual time of the last tenants served; where new tenants start
};

}  // namespace kvd::scheduler::internal
