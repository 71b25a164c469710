#include "train/prefetch.h"

namespace lra::host {

namespace {
Batch pinned(Batch b) {
  b.ids = b.ids.pin_memory();
  b.mask = b.mask.pin_memory();
  if (b.ids2.defined()) {
    b.ids2 = b.ids2.pin_memory();
    b.mask2 = b.mask2.pin_memory();
  }
  if (b.labels.defined()) b.labels = b.labels.pin_memory();
  if (b.targets.defined()) b.targets = b.targets.pin_memory();
  return b;
}
}  // namespace

BatchPrefetcher::BatchPrefetcher(std::function<Batch()> produce, size_t depth, bool pin_memory)
    : produce_(std::move(produce)), depth_(depth < 1 ? 1 : depth), pin_(pin_memory), thread_([this] { loop(); }) {}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BatchPrefetcher::loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || ready_.size() < depth_; });
      if (stop_) return;
    }
    try {
      Batch b = produce_();
      if (pin_) b = pinned(std::move(b));
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(std::move(b));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
      cv_.notify_all();
      return;
    }
    cv_.notify_all();
  }
}

Batch BatchPrefetcher::next() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !ready_.empty() || error_; });
  if (ready_.empty()) std::rethrow_exception(error_);
  Batch b = std::move(ready_.front());
  ready_.pop_front();
  cv_.notify_all();
  return b;
}

}  // namespace lra::host
