// The threads that run the documents' request-path work (an upload's checks, tokenizing and
// first write; a request's document read on a memory-tier miss), so that the HTTP and gRPC
// threads that ask never wait on the store. Tasks run in the order posted.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace kvd::documents {

class RequestWorkers {
 public:
  explicit RequestWorkers(int threads);
  // Stop().
  ~RequestWorkers();
  RequestWorkers(const RequestWorkers&) = delete;
  RequestWorkers& operator=(const RequestWorkers&) = delete;

  // Runs `task` on a worker; false, and `task` dropped, once Stop began.
  bool Post(std::function<void()> task);
  // Runs what was posted, then joins the workers. Idempotent.
  void Stop();

 private:
  void Run();

  base::Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace kvd::documents
