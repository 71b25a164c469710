// train/step_graph.h — CUDA graphs for training updates. Where every
// update has the same shapes, the whole update (forward, backward, clipping,
// the fused AdamW step and the report window's sums) is captured once and
// replayed: one launch per update instead of hundreds, which is where small
// models at large batch spend their time on a GPU (docs/performance.md
// "CUDA graphs"). Captured or not, an update computes the same numbers: the
// same kernels, the same random streams (ATen's CUDA generator advances its
// offsets per replay exactly as per eager update).
//
// plan_step_graph() decides, for every run, whether its updates are captured
// and says why not otherwise; it is plain logic, tested on the CPU. UpdateGraph
// does the capture, and exists only in CUDA builds (step_graph_cuda.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <torch/version.h>

#include "lra/status.h"

// Capture needs the CUDA half of this library (LRA_WITH_CUDA, CUDA LibTorch
// builds only) and LibTorch >= 2.4 (AdamW's fused step with a tensor learning rate).
#if defined(LRA_WITH_CUDA) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))
#define LRA_CUDA_GRAPHS 1
#endif

namespace lra::host {

// --cuda-graphs: auto (capture when every condition holds and every mixer
// declares LRA_CAP_GRAPH_SAFE), on (capture whatever the mixers declare: a
// plugin author trying capture; refused where it cannot be done), off.
enum class GraphRequest { automatic, on, off };

// Throws Error(usage) naming the value and the choices.
GraphRequest parse_graph_request(const std::string& value);
const char* graph_request_name(GraphRequest r);  // "auto" | "on" | "off"

// What decides whether a run's updates can be captured.
struct GraphConditions {
  GraphRequest request = GraphRequest::automatic;
  bool cuda = false;            // the run trains on a CUDA device
  bool compiled = false;        // this build can capture (cuda_graphs_compiled())
  // Every mixer plugin of the model: its name and capability bits.
  std::vector<std::pair<std::string, uint32_t>> mixers;
  bool fixed_shapes = false;    // every update's batch has the same shapes (classification; a
                                // sequence task scores a varying number of positions)
  bool fused_optimizer = false; // clipping and AdamW read nothing back (train/adamw.h fused path)
  bool isolated = false;        // --isolate: each mixer call crosses a pipe to another process
  bool distributed = false;     // more than one rank: gradients all-reduced between updates
};

struct GraphPlan {
  bool capture = false;
  // Why not, when not ("off: the run trains on the CPU"); what a result
  // records in timing.cuda_graphs and run.log prints.
  std::string words;
  // --cuda-graphs on where a condition fails: the run is refused (usage).
  bool refused = false;
  // --cuda-graphs on: a capture that fails ends the run (auto goes on eagerly).
  bool required = false;
};

GraphPlan plan_step_graph(const GraphConditions& c);

// The request parsed, and `on` refused (Error(usage)) where the device cannot
// capture: what `run` and `bench` check before any work.
GraphRequest checked_graph_request(const std::string& value, const c10::Device& device);

// Whether this build can capture: a CUDA LibTorch >= 2.4 (the fused AdamW
// step reads its learning rate from a device tensor there).
bool cuda_graphs_compiled();

// A capture that failed (exit 3: the mixer is not graph-safe as declared, or
// with --cuda-graphs on not at all). Anything the update itself throws
// outside a capture passes through as it is.
class GraphCaptureError : public Error {
 public:
  explicit GraphCaptureError(std::string message) : Error(ErrorKind::plugin, std::move(message)) {}
};

// Runs one training update after another: the first `warmup` eagerly on a
// side stream (so lazy initialisations — cuBLAS workspaces, autotuning —
// happen outside the capture), then captures the next one and replays that
// capture for every later update. The update must read its inputs from
// tensors that stay the same (staged by the caller before each call, on the
// current stream) and never set gradients to None inside. Where the capture
// fails (a mixer that synchronises), run() throws Error(plugin) naming the
// failure (GraphCaptureError); the stream is usable again and the caller may go on eagerly.
class UpdateGraph {
 public:
  UpdateGraph(const c10::Device& device, int warmup);
  ~UpdateGraph();
  UpdateGraph(const UpdateGraph&) = delete;
  UpdateGraph& operator=(const UpdateGraph&) = delete;

  // `update` runs the whole update; `before_capture` runs (eagerly, before
  // the capture begins) once, e.g. to set gradients to None so the captured
  // backward writes them afresh on every replay. Returns true when this call
  // replayed an earlier capture, so `update`'s host code did not run.
  bool run(const std::function<void()>& update, const std::function<void()>& before_capture);

  bool captured() const;  // the last run() replayed a capture
  int64_t replays() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace lra::host
