// distributed/distributed.h — one process per rank; every rank holds the
// whole model, sees a distinct slice of each global batch, and sums its
// gradients with the others' before the (identical) update.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <c10/core/Device.h>

namespace lra::host {

// Where this process sits, from the environment: RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT, or under Slurm SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID (MASTER_ADDR/MASTER_PORT still come from the
// environment; scripts/ and docs/scaling.md show how a job sets them).
struct RankInfo {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source;  // "single process", "torch environment", "torchrun", "slurm"
  bool agent_store = false;  // TORCHELASTIC_USE_AGENT_STORE: the launcher serves the TCP store
  // LRA_DIST_TIMEOUT (seconds): how long each rank, rank 0 included, waits at
  // start-up for the rendezvous server and for every other rank before giving
  // up with a usage error naming the ranks that never arrived.
  int timeout_s = kDefaultRendezvousTimeoutSeconds;
  static constexpr int kDefaultRendezvousTimeoutSeconds = 300;
  static constexpr int kMaxRendezvousTimeoutSeconds = 7 * 24 * 3600;  // a week: longer is a typo, not a queue
};

// Pure function of the variables (for tests); throws usage errors naming the
// variable for malformed or inconsistent values.
RankInfo rank_info_from(const std::map<std::string, std::string>& env);
RankInfo rank_info_from_environment();

class ProcessGroupHandle;  // hides c10d's headers from every includer

class Distributed {
 public:
  // Rendezvous and process group for world_size > 1 ("gloo" on CPU, "nccl" on CUDA).
  Distributed(const RankInfo& info, const c10::Device& device);
  ~Distributed();
  int rank() const { return info_.rank; }
  int world_size() const { return info_.world_size; }
  const std::string& backend() const { return backend_; }
  // Sums the tensors across ranks in place, in buckets of about bucket_bytes
  // (one flattened all-reduce per bucket of same-dtype tensors). Tensors on
  // another device than the group's (a CPU tally under NCCL) travel through it.
  void all_reduce_sum(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes = 25 << 20);
  // Blocks until every rank has arrived.
  void barrier();
  // Every rank's `value` for `key`, indexed by rank, through the rendezvous
  // store (each waits for the others up to LRA_DIST_TIMEOUT).
  std::vector<std::string> all_gather_text(const std::string& key, const std::string& value);

 private:
  RankInfo info_;
  c10::Device device_;  // where the group's collectives run (NCCL: this rank's GPU)
  std::string backend_;
  std::unique_ptr<ProcessGroupHandle> pg_;
};

// Where ranks' run identities (what each was started with: configuration,
// manifest, plugin file, options, seed, data fingerprint) differ from rank
// 0's, one line per differing field and rank; empty when all agree.
std::vector<std::string> identity_disagreements(const std::vector<nlohmann::json>& identities);

// Exchanges `identity` with every rank; any difference stops every rank with
// lra::Error(rules) naming the fields, before the first training step.
void require_identical_ranks(Distributed& dist, const nlohmann::json& identity);

}  // namespace lra::host
