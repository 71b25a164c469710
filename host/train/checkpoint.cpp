#include "train/checkpoint.h"
#include "common/json_input.h"

#include <algorithm>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/serialize.h>

#include "lra/status.h"
#include "train/module_io.h"

#include <unistd.h>

namespace lra::host {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "step-";
constexpr int kKeep = 2;

fs::path checkpoints_dir(const fs::path& run_dir) { return run_dir / "checkpoints"; }

// Complete checkpoints (no ".tmp" suffix), ascending by step.
std::vector<std::pair<int64_t, fs::path>> complete_checkpoints(const fs::path& run_dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoints_dir(run_dir), ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind(kPrefix, 0) != 0) continue;
    const std::string digits = name.substr(std::string(kPrefix).size());
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;  // *.tmp: unfinished
    out.emplace_back(std::stoll(digits), e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// CUDA devices whose generators a checkpoint carries (0 without CUDA).
int64_t cuda_devices() { return at::hasCUDA() ? at::detail::getCUDAHooks().getNumGPUs() : 0; }

void fsync_path(const fs::path& p) {
  // Directory entries and file contents on disk before the rename publishes them.
  if (FILE* f = std::fopen(p.c_str(), "rb")) {
    fflush(f);
    fsync(fileno(f));
    std::fclose(f);
  }
}

}  // namespace

void save_checkpoint(const fs::path& run_dir, const CheckpointState& state, torch::nn::Module& model,
                     torch::optim::Optimizer& optimizer) {
  const fs::path final_dir = checkpoints_dir(run_dir) / (kPrefix + std::to_string(state.step));
  const fs::path tmp = fs::path(final_dir.string() + ".tmp");
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  save_module(model, tmp / "model.pt");  // any registered name round-trips (train/module_io.h)
  {
    torch::serialize::OutputArchive ar;
    optimizer.save(ar);
    ar.save_to((tmp / "optimizer.pt").string());
  }
  {
    torch::serialize::OutputArchive ar;
    ar.write("cpu_generator", at::detail::getDefaultCPUGenerator().get_state());
    // Dropout on a GPU draws from that device's generator: without its state a
    // resumed CUDA run would not repeat the uninterrupted one.
    for (int64_t i = 0; i < cuda_devices(); ++i)
      ar.write("cuda_generator_" + std::to_string(i),
               at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i))).get_state());
    ar.save_to((tmp / "rng.pt").string());
  }
  {
    std::ofstream out(tmp / "state.json");
    out << nlohmann::json{{"step", state.step}, {"identity", state.identity}, {"progress", state.progress}}.dump(1);
    if (!out) throw Error(ErrorKind::internal, "could not write " + (tmp / "state.json").string());
  }
  for (const char* f : {"model.pt", "optimizer.pt", "rng.pt", "state.json"}) fsync_path(tmp / f);
  fs::remove_all(final_dir);
  fs::rename(tmp, final_dir);  // atomic: the checkpoint exists complete or not at all
  fsync_path(checkpoints_dir(run_dir));
  auto all = complete_checkpoints(run_dir);
  for (size_t i = 0; i + kKeep < all.size(); ++i) fs::remove_all(all[i].second);
}

std::optional<fs::path> latest_checkpoint(const fs::path& run_dir) {
  auto all = complete_checkpoints(run_dir);
  if (all.empty()) return std::nullopt;
  return all.back().second;
}

CheckpointState read_checkpoint_state(const fs::path& checkpoint) {
  std::ifstream in(checkpoint / "state.json");
  if (!in) throw Error(ErrorKind::usage, "checkpoint " + checkpoint.string() + " has no readable state.json");
  try {
    auto j = parse_json_input(in);
    return {j.at("step").get<int64_t>(), j.at("identity"), j.at("progress")};
  } catch (const std::exception& e) {
    throw Error(ErrorKind::usage, "checkpoint " + checkpoint.string() + ": state.json is malformed: " + e.what());
  }
}

void load_checkpoint(const fs::path& checkpoint, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                     const torch::Device& device) {
  load_module(model, checkpoint / "model.pt", device);
  {
    torch::serialize::InputArchive ar;
    ar.load_from((checkpoint / "optimizer.pt").string(), device);
    optimizer.load(ar);
  }
  {
    torch::serialize::InputArchive ar;
    ar.load_from((checkpoint / "rng.pt").string());
    at::Tensor state;
    ar.read("cpu_generator", state);
    at::Generator gen = at::detail::getDefaultCPUGenerator();  // a handle sharing the global generator
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state);
    for (int64_t i = 0; i < cuda_devices(); ++i) {
      c10::IValue cuda_state;
      if (!ar.try_read("cuda_generator_" + std::to_string(i), cuda_state)) continue;  // written on a CPU-only machine
      at::Generator g = at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i)));
      std::lock_guard<std::mutex> cuda_lock(g.mutex());
      g.set_state(cuda_state.toTensor());
    }
  }
}

}  // namespace lra::host
