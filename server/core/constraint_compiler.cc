#include "server/core/constraint_compiler.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace kvd::server {
namespace {

// Compile threads yield the cores to the forward pass, as the constraint workers do.
constexpr int32_t kCompileNice = 10;

std::vector<double> CompileSecondsBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0};
}

}  // namespace

ConstraintCompiler::ConstraintCompiler(structured::ConstraintCache& cache,
                                       const ConstraintCompilerOptions& options)
    : cache_(cache),
      options_(options),
      seconds_(CompileSecondsBuckets()),
      workers_({.threads = options.threads,
                .max_pending_per_owner = options.max_per_tenant,
                .nice = kCompileNice}) {}

void ConstraintCompiler::Compile(const std::string& tenant, const structured::ConstraintSpec& spec,
                                 Done done) {
  if (std::shared_ptr<const structured::Constraint> kept = cache_.Find(spec)) {
    done(std::move(kept));
    return;
  }
  const structured::ConstraintCache::Key key = structured::ConstraintCache::KeyOf(spec);
  {
    base::MutexLock lock(mu_);
    if (const auto it = waiting_.find(key); it != waiting_.end()) {
      it->second.push_back(std::move(done));
      return;
    }
    waiting_[key].push_back(std::move(done));
  }
  const base::FairWorkers::PostResult posted =
      workers_.Post(tenant, [this, spec, key, queued = absl::Now()] { Run(spec, key, queued); });
  if (posted == base::FairWorkers::PostResult::kPosted) return;
  // Refused: so is every request that joined this compile meanwhile.
  absl::Status refusal;
  if (posted == base::FairWorkers::PostResult::kOwnerFull) {
    Refused();
    refusal = absl::ResourceExhaustedError(absl::StrCat(
        "this tenant already has ", options_.max_per_tenant,
        " constraints compiling (structured_outputs.max_compiles_per_tenant); retry once they "
        "are done"));
  } else {
    refusal = absl::UnavailableError("the server is shutting down");
  }
  Answer(key, refusal);
}

void ConstraintCompiler::Answer(
    const structured::ConstraintCache::Key& key,
    const absl::StatusOr<std::shared_ptr<const structured::Constraint>>& compiled) {
  std::vector<Done> waiting;
  {
    base::MutexLock lock(mu_);
    const auto it = waiting_.find(key);
    waiting = std::move(it->second);
    waiting_.erase(it);
  }
  for (Done& done : waiting) done(compiled);
}

void ConstraintCompiler::Run(const structured::ConstraintSpec& spec,
                             const structured::ConstraintCache::Key& key, absl::Time queued) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::shared_ptr<const structured::Constraint>> compiled;
  const bool waited_too_long = start - queued > options_.timeout;
  if (waited_too_long) {
    Refused();
    compiled = absl::ResourceExhaustedError(
        absl::StrCat("the server is busy compiling constraints; this one waited more than ",
                     absl::FormatDuration(options_.timeout), " to start"));
  } else {
    compiled = cache_.Get(spec, options_.timeout);
  }
  {
    base::MutexLock lock(mu_);
    if (!waited_too_long) seconds_.Observe(absl::ToDoubleSeconds(absl::Now() - start));
  }
  Answer(key, compiled);
}

void ConstraintCompiler::Refused() {
  base::MutexLock lock(mu_);
  ++refused_;
}

ConstraintCompileStats ConstraintCompiler::stats() const {
  base::MutexLock lock(mu_);
  return {.seconds = seconds_.snapshot(), .refused = refused_};
}

}  // namespace kvd::server
