// The CUDA half of train/step_graph.h: compiled only against a CUDA LibTorch.
#include "train/step_graph.h"

#ifdef LRA_CUDA_GRAPHS

#include <optional>

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "common/text.h"
#include "lra/status.h"

namespace lra::host {

struct UpdateGraph::State {
  c10::Device device;  // the CPU: every update eagerly (the staged path without a capture)
  int warmup;
  int updates = 0;
  int64_t replays = 0;
  std::optional<c10::cuda::CUDAStream> side;  // where updates run and replay (CUDA devices)
  std::optional<at::cuda::CUDAGraph> graph;
  bool captured = false;
};

UpdateGraph::UpdateGraph(const c10::Device& device, int warmup)
    : s_(new State{device, warmup, 0, 0, std::nullopt, std::nullopt, false}) {
  if (device.is_cuda()) s_->side = c10::cuda::getStreamFromPool(false, device.index());
}

UpdateGraph::~UpdateGraph() = default;

namespace {
// `waiting` runs nothing until the work queued so far on `first` is done.
void wait_for(const c10::cuda::CUDAStream& waiting, const c10::cuda::CUDAStream& first) {
  at::cuda::CUDAEvent done;
  done.record(first);
  done.block(waiting);
}
}  // namespace

bool UpdateGraph::run(const std::function<void()>& update, const std::function<void()>& before_capture) {
  auto& s = *s_;
  if (s.device.is_cpu()) {
    update();
    return false;
  }
  c10::cuda::CUDAGuard device_guard(s.device);
  const auto caller = c10::cuda::getCurrentCUDAStream(s.device.index());
  bool replayed = false;
  wait_for(*s.side, caller);  // the staged inputs, written on the caller's stream
  {
    c10::cuda::CUDAStreamGuard on_side(*s.side);
    if (s.captured) {
      s.graph->replay();
      ++s.replays;
      replayed = true;
    } else if (s.updates < s.warmup) {
      update();
    } else {
      before_capture();
      s.graph.emplace();
      try {
        s.graph->capture_begin();
        update();
        s.graph->capture_end();
      } catch (const std::exception& e) {
        // End the capture the update broke (capture_end releases the
        // allocator's pool, then reports the invalidated capture), so the
        // stream and the allocator work eagerly again.
        try {
          s.graph->capture_end();
        } catch (const std::exception&) {
        }
        s.graph.reset();
        (void)cudaGetLastError();
        throw GraphCaptureError("the training update could not be captured in a CUDA graph (" +
                                text::first_line(e.what()) +
                                "); run with --cuda-graphs off, or make the mixer graph-safe (docs/abi.md)");
      }
      s.captured = true;
      s.graph->replay();  // the capture recorded the update; this runs it
      ++s.replays;
    }
  }
  wait_for(caller, *s.side);  // evaluation and checkpoints see the updated parameters
  ++s.updates;
  return replayed;
}

bool UpdateGraph::captured() const { return s_->captured; }
int64_t UpdateGraph::replays() const { return s_->replays; }

}  // namespace lra::host

#endif  // LRA_CUDA_GRAPHS
