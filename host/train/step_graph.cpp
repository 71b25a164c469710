#include "train/step_graph.h"

#include "common/text.h"
#include "lra/abi.h"
#include "lra/status.h"

namespace lra::host {

GraphRequest parse_graph_request(const std::string& value) {
  if (value == "auto") return GraphRequest::automatic;
  if (value == "on") return GraphRequest::on;
  if (value == "off") return GraphRequest::off;
  throw Error(ErrorKind::usage, "--cuda-graphs: '" + value + "' is not one of auto, on, off");
}

const char* graph_request_name(GraphRequest r) {
  switch (r) {
    case GraphRequest::automatic: return "auto";
    case GraphRequest::on: return "on";
    case GraphRequest::off: return "off";
  }
  return "auto";
}

GraphPlan plan_step_graph(const GraphConditions& c) {
  if (c.request == GraphRequest::off) return {false, "off (--cuda-graphs off)", false};
  // What makes capture impossible, whatever the mixers declare; the first that applies.
  std::string why;
  if (!c.cuda) why = "the run trains on the CPU";
  else if (!c.compiled) why = "this build cannot capture (it needs a CUDA LibTorch 2.4 or newer)";
  else if (c.distributed) why = "gradients are all-reduced between ranks";
  else if (c.isolated) why = "the mixer runs in its own process (--isolate)";
  else if (!c.fixed_shapes) why = "the batches' shapes change between updates (a sequence task)";
  else if (!c.fused_optimizer) why = "the optimizer step reads values back (LRA_FUSED_OPTIMIZER=0, or a gradient that "
                                     "is not float32)";
  if (!why.empty()) return {false, "off: " + why, c.request == GraphRequest::on};
  std::vector<std::string> undeclared;
  for (const auto& [name, caps] : c.mixers)
    if (!(caps & LRA_CAP_GRAPH_SAFE)) undeclared.push_back(name);
  if (c.request == GraphRequest::on)
    return {true, undeclared.empty() ? "captured"
                                     : "captured (--cuda-graphs on; " + text::join(undeclared, ", ") +
                                           " does not declare graph_safe)",
            false, true};
  if (!undeclared.empty())
    return {false, "off: plugin " + text::join(undeclared, ", ") + " does not declare graph_safe (LRA_CAP_GRAPH_SAFE)",
            false};
  return {true, "captured", false};
}

GraphRequest checked_graph_request(const std::string& value, const c10::Device& device) {
  const GraphRequest r = parse_graph_request(value);
  if (r == GraphRequest::on && !device.is_cuda())
    throw Error(ErrorKind::usage, "--cuda-graphs on: CUDA graphs need a CUDA device, and this trains on the CPU");
  if (r == GraphRequest::on && !cuda_graphs_compiled())
    throw Error(ErrorKind::usage, "--cuda-graphs on: this build cannot capture (it needs a CUDA LibTorch 2.4 or newer)");
  return r;
}

bool cuda_graphs_compiled() {
#ifdef LRA_CUDA_GRAPHS
  return true;
#else
  return false;
#endif
}

#ifndef LRA_CUDA_GRAPHS
// A build that cannot capture: plan_step_graph never plans a capture, and on
// the CPU (where tests run the staged path) every update runs eagerly.
struct UpdateGraph::State {};
UpdateGraph::UpdateGraph(const c10::Device& device, int) {
  if (!device.is_cpu()) throw Error(ErrorKind::internal, "CUDA graphs are not compiled into this build");
}
UpdateGraph::~UpdateGraph() = default;
bool UpdateGraph::run(const std::function<void()>& update, const std::function<void()>&) {
  update();
  return false;
}
bool UpdateGraph::captured() const { return false; }
int64_t UpdateGraph::replays() const { return 0; }
#endif

}  // namespace lra::host
