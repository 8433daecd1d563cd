// The compressions running for uploads, by tenant and id: what Get and List report while a
// document is processing, what Delete cancels, and what Shutdown waits for. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "cache_store/store/document_meta.h"
#include "scheduler/scheduler.h"

namespace kvd::documents {

// One upload's compression, from its submission until the writer has stored (or failed) it.
struct CompressionJob {
  cache_store::DocumentMeta meta;  // as stored while processing
  scheduler::CompressionHandle handle;
  absl::Time started;
  // Why the writer could not store the finished cache, when the fault was the storage's and a
  // retry may succeed (the shared tier unreachable): the waiting upload answers with it.
  // Written and read on the writer's thread.
  absl::Status store_error;
};

class CompressionJobs {
 public:
  // Registers a submitted job; Unavailable once Stop was called.
  absl::Status Add(std::shared_ptr<CompressionJob> job);
  // Whether new jobs are refused.
  bool stopping() const;
  // The meta and progress of (tenant, id) while it compresses and was not deleted.
  std::optional<std::pair<cache_store::DocumentMeta, double>> Running(const std::string& tenant,
                                                                      const std::string& id) const;
  // The progress of (tenant, id) while it is registered.
  std::optional<double> Progress(const std::string& tenant, const std::string& id) const;
  // Marks (tenant, id) deleted and cancels its compression: true when one was running.
  bool Delete(const std::string& tenant, const std::string& id);
  // Whether the job was deleted while it ran.
  bool Deleted(const CompressionJob& job) const;
  // Whether the writer is done with the job (stored, failed or dropped).
  bool Finished(const CompressionJob& job) const;
  // The writer is done with the job: it leaves the table.
  void Finish(const CompressionJob& job);
  // Refuses new jobs from now on and cancels the running ones.
  void Stop();
  // Stop was called and no job is left.
  bool StoppedAndIdle() const;
  int64_t running() const;

 private:
  struct Entry {
    std::shared_ptr<CompressionJob> job;
    bool deleted = false;
  };
  static std::string Key(const std::string& tenant, const std::string& id);

  mutable base::Mutex mu_;
  std::map<std::string, Entry> jobs_ ABSL_GUARDED_BY(mu_);  // by tenant and id
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kvd::documents
