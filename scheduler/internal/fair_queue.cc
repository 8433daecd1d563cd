#include "scheduler/internal/fair_queue.h"

#include <algorithm>
#include <limits>

#include "base/check.h"

namespace kvd::scheduler::internal {

double FairQueue::MinActiveVirtualTime() const {
  double minimum = std::numeric_limits<double>::infinity();
  for (const auto& [name, tenant] : tenants_) {
    if (tenant.active()) minimum = std::min(minimum, tenant.virtual_time);
  }
  return minimum;
}

void FairQueue::Activate(Tenant& tenant) {
  if (tenant.active()) return;
  const double minimum = MinActiveVirtualTime();
  const double start = minimum == std::numeric_limits<double>::infinity() ? floor_ : minimum;
  tenant.virtual_time = std::max(tenant.virtual_time, start);
}

void FairQueue::MaybeForget(const std::string& name) {
  const auto it = tenants_.find(name);
  if (it != tenants_.end() && !it->second.active() && it->second.virtual_time <= floor_) {
    tenants_.erase(it);
  }
}

void FairQueue::Push(std::unique_ptr<Sequence> sequence) {
  const TenantPolicy& policy = sequence->tenant();
  Tenant& tenant = tenants_[policy.id];
  Activate(tenant);
  tenant.weight = policy.weight;
  tenant.max_running = policy.max_running_sequences;
  const Key key = sequence->order();
  tenant.waiting.emplace(key, std::move(sequence));
  ++size_;
}

Sequence* FairQueue::Next() const {
  Sequence* best = nullptr;
  std::tuple<int32_t, double, int64_t, int32_t> best_rank;
  for (const auto& [name, tenant] : tenants_) {
    if (tenant.waiting.empty()) continue;
    if (tenant.max_running > 0 && tenant.running >= tenant.max_running) continue;
    Sequence* head = tenant.waiting.begin()->second.get();
    const auto [priority, arrival, choice] = head->order();
    const std::tuple<int32_t, double, int64_t, int32_t> rank{priority, tenant.virtual_time, arrival,
                                                             choice};
    if (best == nullptr || rank < best_rank) {
      best = head;
      best_rank = rank;
    }
  }
  return best;
}

std::unique_ptr<Sequence> FairQueue::PopForRunning(Sequence* sequence) {
  Tenant& tenant = tenants_.at(sequence->tenant().id);
  const auto it = tenant.waiting.find(sequence->order());
  KVD_CHECK(it != tenant.waiting.end());
  std::unique_ptr<Sequence> popped = std::move(it->second);
  tenant.waiting.erase(it);
  ++tenant.running;
  --size_;
  return popped;
}

void FairQueue::AddRunning(const TenantPolicy& policy) {
  Tenant& tenant = tenants_[policy.id];
  Activate(tenant);
  ++tenant.running;
}

void FairQueue::RemoveRunning(const std::string& name) {
  Tenant& tenant = tenants_.at(name);
  --tenant.running;
  MaybeForget(name);
}

void FairQueue::Charge(const std::string& name, double tokens) {
  Tenant& tenant = tenants_.at(name);
  tenant.virtual_time += tokens / tenant.weight;
  const double minimum = MinActiveVirtualTime();
  if (minimum != std::numeric_limits<double>::infinity()) floor_ = std::max(floor_, minimum);
}

std::vector<std::unique_ptr<Sequence>> FairQueue::RemoveIf(
    const std::function<bool(const Sequence&)>& predicate) {
  std::vector<std::unique_ptr<Sequence>> removed;
  std::vector<std::string> emptied;
  for (auto& [name, tenant] : tenants_) {
    for (auto it = tenant.waiting.begin(); it != tenant.waiting.end();) {
      if (predicate(*it->second)) {
        removed.push_back(std::move(it->second));
        it = tenant.waiting.erase(it);
        --size_;
      } else {
        ++it;
      }
    }
    if (!tenant.active()) emptied.push_back(name);
  }
  for (const std::string& name : emptied) MaybeForget(name);
  return removed;
}

std::map<std::string, TenantStats> FairQueue::Gauges() const {
  std::map<std::string, TenantStats> gauges;
  for (const auto& [name, tenant] : tenants_) {
    if (!tenant.active()) continue;
    TenantStats& stats = gauges[name];
    stats.running = tenant.running;
    stats.waiting = static_cast<int32_t>(tenant.waiting.size());
  }
  return gauges;
}

double FairQueue::virtual_time(const std::string& name) const {
  const auto it = tenants_.find(name);
  return it == tenants_.end() ? floor_ : it->second.virtual_time;
}

}  // namespace kvd::scheduler::internal
