// Builds the next training batches on a background thread while the device
// runs the current step, so the step loop never waits for CPU-side batching
// (and, on CUDA, copies from page-locked memory without blocking).
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "train/batches.h"

namespace lra::host {

class BatchPrefetcher {
 public:
  // `produce` is called only from the background thread, in order, so a
  // seeded data stream inside it keeps its deterministic order.
  BatchPrefetcher(std::function<Batch()> produce, size_t depth, bool pin_memory);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;
  // The next batch in order; rethrows a failure of `produce`.
  Batch next();

 private:
  void loop();
  std::function<Batch()> produce_;
  size_t depth_;
  bool pin_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace lra::host
