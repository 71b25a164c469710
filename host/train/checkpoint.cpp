#include "train/checkpoint.h"
#include "common/json_input.h"
#include "train/progress_check.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <sstream>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/serialize.h>

#include "common/atomic_file.h"
#include "lra/status.h"
#include "train/module_io.h"

#include <unistd.h>

namespace lra::host {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "step-";
constexpr int kKeep = 2;

fs::path checkpoints_dir(const fs::path& run_dir) { return run_dir / "checkpoints"; }


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

CheckpointList list_checkpoints(const fs::path& run_dir) {
  CheckpointList out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoints_dir(run_dir), ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory(ec) || name.rfind(kPrefix, 0) != 0) continue;
    const std::string digits = name.substr(std::string(kPrefix).size());
    if (digits.size() > 4 && digits.compare(digits.size() - 4, 4, ".tmp") == 0) continue;  // unfinished
    int64_t step = -1;
    const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit) || err != std::errc() ||
        end != digits.data() + digits.size()) {
      out.ignored.emplace_back(e.path(), err == std::errc::result_out_of_range
                                             ? "its step number is out of range"
                                             : "its name is not step-<number>");
      continue;
    }
    out.complete.emplace_back(step, e.path());
  }
  std::sort(out.complete.begin(), out.complete.end());
  std::sort(out.ignored.begin(), out.ignored.end());
  return out;
}

std::vector<fs::path> save_checkpoint(const fs::path& run_dir, const CheckpointState& state, torch::nn::Module& model,
                                      torch::optim::Optimizer& optimizer) {
  const fs::path final_dir = checkpoints_dir(run_dir) / (kPrefix + std::to_string(state.step));
  const fs::path tmp = fs::path(final_dir.string() + ".tmp");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) throw Error(ErrorKind::storage, storage_failure(tmp, "cannot create the checkpoint folder", ec.value()));
  // Every file through one checked atomic write (common/atomic_file.h): a full
  // disk is Error(storage), the previous checkpoint stays intact.
  save_module(model, tmp / "model.pt");  // any registered name round-trips (train/module_io.h)
  auto save_archive = [](torch::serialize::OutputArchive& ar, const fs::path& file) {
    std::ostringstream bytes;
    ar.save_to(bytes);
    write_file_atomic(file, bytes.str());
  };
  {
    torch::serialize::OutputArchive ar;
    optimizer.save(ar);
    save_archive(ar, tmp / "optimizer.pt");
  }
  {
    torch::serialize::OutputArchive ar;
    ar.write("cpu_generator", at::detail::getDefaultCPUGenerator().get_state());
    // Dropout on a GPU draws from that device's generator: without its state a
    // resumed CUDA run would not repeat the uninterrupted one.
    for (int64_t i = 0; i < cuda_devices(); ++i)
      ar.write("cuda_generator_" + std::to_string(i),
               at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i))).get_state());
    save_archive(ar, tmp / "rng.pt");
  }
  write_file_atomic(tmp / "state.json",
                    nlohmann::json{{"step", state.step}, {"identity", state.identity}, {"progress", state.progress}}
                        .dump(1));
  fs::remove_all(final_dir, ec);
  if (::rename(tmp.c_str(), final_dir.c_str()) != 0)  // atomic: the checkpoint exists complete or not at all
    throw Error(ErrorKind::storage, storage_failure(final_dir, "cannot rename the finished checkpoint into place", errno));
  fsync_path(checkpoints_dir(run_dir));
  return prune_checkpoints(run_dir, state.step, state.identity);
}

std::vector<fs::path> prune_checkpoints(const fs::path& run_dir, int64_t newest, const nlohmann::json& identity) {
  // Only checkpoints of this run older than the one just written are
  // candidates: a folder another run (or anyone) put there, or one whose
  // state.json cannot be read, is never deleted, whatever its step number,
  // and the newest checkpoint is never among the candidates.
  std::vector<fs::path> own, foreign;
  for (const auto& [step, dir] : list_checkpoints(run_dir).complete) {
    if (step >= newest) continue;  // the new one, or a later one this resume will overwrite
    if (is_checkpoint_of(dir, step, identity))
      own.push_back(dir);
    else
      foreign.push_back(dir);
  }
  // `own` ascends by step: keep the kKeep - 1 newest of it beside the new one.
  std::error_code ec;
  for (size_t i = 0; i + (kKeep - 1) < own.size(); ++i) fs::remove_all(own[i], ec);
  return foreign;
}

bool is_checkpoint_of(const fs::path& dir, int64_t step, const nlohmann::json& identity) {
  std::error_code ec;
  for (const char* f : {"model.pt", "optimizer.pt", "rng.pt", "state.json"})
    if (!fs::is_regular_file(dir / f, ec) || fs::is_symlink(dir / f, ec)) return false;
  try {
    std::ifstream in(dir / "state.json");
    const nlohmann::json j = parse_json_input(in);
    return j.is_object() && j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() == step &&
           j.contains("identity") && j["identity"] == identity;
  } catch (const std::exception&) {
    return false;
  }
}

std::optional<fs::path> latest_checkpoint(const fs::path& run_dir) {
  auto all = list_checkpoints(run_dir).complete;
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

void check_checkpoint_state(const fs::path& checkpoint, int64_t total_steps) {
  const fs::path file = checkpoint / "state.json";
  std::ifstream in(file);
  if (!in) throw Error(ErrorKind::data, file.string() + " is missing or unreadable");
  nlohmann::json j;
  try {
    j = parse_json_input(in);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::data, file.string() + " is not valid JSON (" + e.what() + ")");
  }
  auto bad = [&](const std::string& field, const std::string& what) {
    return Error(ErrorKind::data, file.string() + ": " + field + " " + what);
  };
  if (!j.is_object()) throw bad("(the document)", "is not an object");
  const auto in_range = [](const nlohmann::json& v, int64_t lo, int64_t hi) {
    if (!v.is_number_integer()) return false;
    if (v.is_number_unsigned()) {  // how nlohmann::json holds every integer >= 0 it parses
      const uint64_t x = v.get<uint64_t>();
      return x <= static_cast<uint64_t>(hi) && (lo <= 0 || x >= static_cast<uint64_t>(lo));
    }
    const int64_t x = v.get<int64_t>();
    return x >= lo && x <= hi;
  };
  if (!j.contains("step")) throw bad("step", "is missing");
  if (!in_range(j["step"], 1, total_steps))
    throw bad("step", "is " + j["step"].dump() + ", not an integer in 1.." + std::to_string(total_steps) +
                          " (the manifest's train.steps)");
  const int64_t step = j["step"].get<int64_t>();
  const std::string name = checkpoint.filename().string();
  if (name != kPrefix + std::to_string(step))
    throw bad("step", "is " + std::to_string(step) + " but the folder is " + name);
  if (!j.contains("identity") || !j["identity"].is_object()) throw bad("identity", "is missing or not an object");
  if (!j.contains("progress")) throw bad("progress", "is missing");
  // Types and ranges (train/progress_check.h): the values reach result.json.
  if (const auto problem = progress_problem(j["progress"], step)) throw bad(problem->first, problem->second);
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
