#include "documents/compression_jobs.h"

#include <utility>

namespace kvd::documents {

std::string CompressionJobs::Key(const std::string& tenant, const std::string& id) {
  return tenant + "\n" + id;
}

absl::Status CompressionJobs::Add(std::shared_ptr<CompressionJob> job) {
  base::MutexLock lock(mu_);
  if (stopping_) return absl::UnavailableError("the server is shutting down");
  const std::string key = Key(job->meta.tenant, job->meta.id);
  jobs_[key] = Entry{std::move(job)};
  return absl::OkStatus();
}

bool CompressionJobs::stopping() const {
  base::MutexLock lock(mu_);
  return stopping_;
}

std::optional<std::pair<cache_store::DocumentMeta, double>> CompressionJobs::Running(
    const std::string& tenant, const std::string& id) const {
  base::MutexLock lock(mu_);
  const auto it = jobs_.find(Key(tenant, id));
  if (it == jobs_.end() || it->second.deleted) return std::nullopt;
  return std::pair{it->second.job->meta, it->second.job->handle.progress()};
}

std::optional<double> CompressionJobs::Progress(const std::string& tenant,
                                                const std::string& id) const {
  base::MutexLock lock(mu_);
  const auto it = jobs_.find(Key(tenant, id));
  if (it == jobs_.end()) return std::nullopt;
  return it->second.job->handle.progress();
}

bool CompressionJobs::Delete(const std::string& tenant, const std::string& id) {
  base::MutexLock lock(mu_);
  const auto it = jobs_.find(Key(tenant, id));
  if (it == jobs_.end() || it->second.deleted) return false;
  it->second.deleted = true;
  it->second.job->handle.Cancel();
  return true;
}

bool CompressionJobs::Deleted(const CompressionJob& job) const {
  base::MutexLock lock(mu_);
  const auto it = jobs_.find(Key(job.meta.tenant, job.meta.id));
  return it != jobs_.end() && it->second.job.get() == &job && it->second.deleted;
}

bool CompressionJobs::Finished(const CompressionJob& job) const {
  base::MutexLock lock(mu_);
  const auto it = jobs_.find(Key(job.meta.tenant, job.meta.id));
  return it == jobs_.end() || it->second.job.get() != &job;
}

void CompressionJobs::Finish(const CompressionJob& job) {
  base::MutexLock lock(mu_);
  const auto it = jobs_.find(Key(job.meta.tenant, job.meta.id));
  if (it != jobs_.end() && it->second.job.get() == &job) jobs_.erase(it);
}

void CompressionJobs::Stop() {
  base::MutexLock lock(mu_);
  stopping_ = true;
  for (auto& [key, entry] : jobs_) entry.job->handle.Cancel();
}

bool CompressionJobs::StoppedAndIdle() const {
  base::MutexLock lock(mu_);
  return stopping_ && jobs_.empty();
}

int64_t CompressionJobs::running() const {
  base::MutexLock lock(mu_);
  return static_cast<int64_t>(jobs_.size());
}

}  // namespace kvd::documents
