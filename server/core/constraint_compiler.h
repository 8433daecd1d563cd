// Structured-output constraints compiled off the HTTP and gRPC threads: a compile (a large JSON
// Schema's grammar takes tens of milliseconds) runs on a small pool of threads at a lower CPU
// priority, the tenants taking turns, each tenant with only so many compiles queued or running;
// the request continues on the thread that compiled its constraint.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/fair_workers.h"
#include "base/histogram.h"
#include "base/mutex.h"
#include "structured/constraint_cache.h"

namespace kvd::server {

struct ConstraintCompilerOptions {
  int32_t threads = 1;
  // Compiles one tenant may have queued or running; more are refused (ResourceExhausted).
  int32_t max_per_tenant = 4;
  // The longest a compile may take (a longer one is InvalidArgument and not kept), and the
  // longest a compile may wait for a thread (then ResourceExhausted).
  absl::Duration timeout = absl::Seconds(10);
};

// What /metrics reports of the compiles.
struct ConstraintCompileStats {
  base::HistogramSnapshot seconds;  // compiles that ran, successful or not
  uint64_t refused = 0;             // over a tenant's limit or waited past the timeout
};

class ConstraintCompiler {
 public:
  using Done = std::function<void(absl::StatusOr<std::shared_ptr<const structured::Constraint>>)>;

  ConstraintCompiler(structured::ConstraintCache& cache, const ConstraintCompilerOptions& options);

  // The compiled constraint of `spec` for `tenant`, passed to `done` once: at once on the
  // caller's thread when the cache holds it or the tenant is at its limit, otherwise on a
  // compile thread. Requests for a constraint being compiled wait for that compile (a burst
  // of requests with one schema compiles it once and counts once against the limit). Errors:
  // InvalidArgument as ConstraintCache::Get (the timeout its budget); ResourceExhausted when the
  // tenant has max_per_tenant compiles pending, when the compile waited past the timeout for a
  // thread; Unavailable once the compiler stops.
  void Compile(const std::string& tenant, const structured::ConstraintSpec& spec, Done done);

  ConstraintCompileStats stats() const;

 private:
  void Refused();
  // Runs on a compile thread: compiles `spec` (whose key is `key`) unless it waited past the
  // timeout, and passes the result to everyone waiting for it.
  void Run(const structured::ConstraintSpec& spec, const structured::ConstraintCache::Key& key,
           absl::Time queued);
  // Passes `compiled` to every request waiting for the compile of `key`, which ends.
  void Answer(const structured::ConstraintCache::Key& key,
              const absl::StatusOr<std::shared_ptr<const structured::Constraint>>& compiled);

  structured::ConstraintCache& cache_;
  const ConstraintCompilerOptions options_;
  mutable base::Mutex mu_;
  base::Histogram seconds_ ABSL_GUARDED_BY(mu_);
  uint64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  // The requests waiting for each compile queued or running.
  absl::flat_hash_map<structured::ConstraintCache::Key, std::vector<Done>> waiting_
      ABSL_GUARDED_BY(mu_);
  // Last, so that it stops (finishing the queued compiles) before anything above goes.
  base::FairWorkers workers_;
};

}  // namespace kvd::server
