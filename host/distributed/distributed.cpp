#include "distributed/distributed.h"

#include <charconv>
#include <chrono>
#include <limits>
#include <cstdlib>
#include <set>
#include <thread>
#include <torch/version.h>

// A pip torch wheel ships c10d's Gloo header without Gloo's own headers:
// there the CPU process group is unavailable (CUDA uses NCCL).
#if __has_include(<gloo/algorithm.h>)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#define LRA_HAVE_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "lra/status.h"

extern char** environ;

namespace lra::host {

// LibTorch 2.x splits the process group from its backends (Gloo, NCCL derive
// from c10d::Backend); 1.13's backends are process groups themselves.
#if TORCH_VERSION_MAJOR >= 2
using ProcessGroupBase = c10d::Backend;
#else
using ProcessGroupBase = c10d::ProcessGroup;
#endif
class ProcessGroupHandle {
 public:
  c10::intrusive_ptr<ProcessGroupBase> pg;
  c10::intrusive_ptr<c10d::Store> store;  // the rendezvous store, for small exchanges
};

namespace {

// An integer in min..max: a value outside says which side it is on, so an
// integer that is merely too large is not called "not an integer".
int parse_int(const std::map<std::string, std::string>& env, const std::string& key, int fallback, int min,
              int max = std::numeric_limits<int>::max()) {
  auto it = env.find(key);
  if (it == env.end() || it->second.empty()) return fallback;
  const std::string& s = it->second;
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  std::string why;
  if (end != s.data() + s.size() || (ec != std::errc() && ec != std::errc::result_out_of_range))
    why = "is not an integer";
  else if (ec == std::errc::result_out_of_range ? s[0] != '-' : v > max)
    why = "is too large";
  else if (ec == std::errc::result_out_of_range || v < min)
    why = "is too small";
  else
    return static_cast<int>(v);
  throw Error(ErrorKind::usage, "environment variable " + key + "=" + s + " " + why + ": expected an integer in " +
                                    std::to_string(min) + ".." + std::to_string(max));
}

}  // namespace

RankInfo rank_info_from(const std::map<std::string, std::string>& env) {
  RankInfo r;
  const bool torch_env = env.count("WORLD_SIZE") > 0;
  const bool slurm = !torch_env && env.count("SLURM_NTASKS") > 0 && env.count("SLURM_PROCID") > 0;
  if (torch_env) {
    r.world_size = parse_int(env, "WORLD_SIZE", 1, 1);
    r.rank = parse_int(env, "RANK", 0, 0);
    r.local_rank = parse_int(env, "LOCAL_RANK", r.rank, 0);
    r.source = "torch environment";
  } else if (slurm) {
    r.world_size = parse_int(env, "SLURM_NTASKS", 1, 1);
    r.rank = parse_int(env, "SLURM_PROCID", 0, 0);
    r.local_rank = parse_int(env, "SLURM_LOCALID", 0, 0);
    r.source = "slurm";
  } else {
    r.source = "single process";
    return r;
  }
  if (r.rank >= r.world_size)
    throw Error(ErrorKind::usage, "rank " + std::to_string(r.rank) + " is not below the world size " +
                                      std::to_string(r.world_size) + " (" + r.source + ")");
  if (auto it = env.find("MASTER_ADDR"); it != env.end() && !it->second.empty()) r.master_addr = it->second;
  r.master_port = parse_int(env, "MASTER_PORT", 29500, 1, 65535);
  r.timeout_s = parse_int(env, "LRA_DIST_TIMEOUT", RankInfo::kDefaultRendezvousTimeoutSeconds, 1,
                          RankInfo::kMaxRendezvousTimeoutSeconds);
  // torchrun (torchelastic) may already serve the store on MASTER_PORT and
  // say so; rank 0 then joins it as a client instead of binding the port.
  if (auto it = env.find("TORCHELASTIC_USE_AGENT_STORE"); it != env.end())
    r.agent_store = it->second == "True" || it->second == "true" || it->second == "1";
  if (torch_env && env.count("TORCHELASTIC_RUN_ID")) r.source = "torchrun";
  return r;
}

namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) s += i + 1 == ranks.size() ? " and " : ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

std::string first_line(const std::exception& e) {
  std::string msg = e.what();
  msg.resize(std::min(msg.size(), msg.find('\n')));
  return msg;
}

// Every rank announces itself under its own key, then waits (polling, with a
// deadline) until every rank's key is there. Without this, rank 0 started
// alone waited forever: TCPStore's wait for its workers gives up silently and
// gloo's rendezvous then waits for its peers without a word.
void wait_for_every_rank(c10d::Store& store, const RankInfo& info, const std::string& where) {
  std::string prefix = "lrahost/arrived/";
  if (const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT"); restart && *restart)
    prefix += std::string(restart) + "/";  // a restarted torchrun group does not see the last attempt's keys
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(info.timeout_s);
  std::vector<char> arrived(static_cast<size_t>(info.world_size), 0);
  arrived[static_cast<size_t>(info.rank)] = 1;
  auto missing = [&] {
    std::vector<int> m;
    for (int r = 0; r < info.world_size; ++r)
      if (!arrived[r]) m.push_back(r);
    return m;
  };
  auto never_arrived = [&](const std::string& how) {
    const std::vector<int> m = missing();
    return Error(ErrorKind::usage,
                 "rank " + std::to_string(info.rank) + " of " + std::to_string(info.world_size) + ": rank" +
                     (m.size() == 1 ? " " : "s ") + rank_list(m) + " never arrived at the rendezvous " + where + " " +
                     how + "; start every rank 0.." + std::to_string(info.world_size - 1) +
                     " with the same WORLD_SIZE, MASTER_ADDR and MASTER_PORT, or raise LRA_DIST_TIMEOUT");
  };
  try {
    store.set(prefix + std::to_string(info.rank), std::vector<uint8_t>{'1'});
  } catch (const std::exception& e) {
    throw Error(ErrorKind::usage, "rank " + std::to_string(info.rank) + ": the rendezvous " + where +
                                      " failed: " + first_line(e) + " (did rank 0 stop?)");
  }
  for (;;) {
    try {
      for (int r = 0; r < info.world_size; ++r)
        if (!arrived[r]) arrived[r] = store.check({prefix + std::to_string(r)});
    } catch (const std::exception& e) {
      // Rank 0 serves the store: it gave up first (its own deadline) or stopped.
      if (missing().empty()) throw;
      throw never_arrived("(rank 0, which serves the rendezvous, stopped waiting first: " + first_line(e) + ")");
    }
    if (missing().empty()) return;
    if (std::chrono::steady_clock::now() >= deadline)
      throw never_arrived("within " + std::to_string(info.timeout_s) + " s (LRA_DIST_TIMEOUT)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

RankInfo rank_info_from_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return rank_info_from(env);
}

Distributed::Distributed(const RankInfo& info, const c10::Device& device)
    : info_(info), device_(device), pg_(std::make_unique<ProcessGroupHandle>()) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(info.master_port);
  so.isServer = info.rank == 0 && !info.agent_store;
  so.numWorkers = info.world_size;
  // Arrival is awaited below, with a deadline and the missing ranks named.
  so.waitWorkers = false;
  so.timeout = std::chrono::seconds(info.timeout_s);  // a client's attempts to reach the server
  const std::string where = info.master_addr + ":" + std::to_string(info.master_port);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(info.master_addr, so);
  } catch (const std::exception& e) {
    const std::string msg = first_line(e);
    const bool client = !so.isServer;
    throw Error(ErrorKind::usage,
                "rendezvous at " + where + " failed for rank " + std::to_string(info.rank) + ": " + msg +
                    (client ? " (no rendezvous server there within " + std::to_string(info.timeout_s) +
                                  " s, LRA_DIST_TIMEOUT: rank 0" + (info.agent_store ? "'s launcher" : "") +
                                  " never arrived; check MASTER_ADDR/MASTER_PORT and that every rank started)"
                            : " (check MASTER_ADDR/MASTER_PORT and that every rank started)"));
  }
  wait_for_every_rank(*store, info, where);
  pg_->store = store;
  if (device.is_cuda()) {
#ifdef USE_C10D_NCCL
    backend_ = "nccl";
    pg_->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, info.rank, info.world_size);
#else
    throw Error(ErrorKind::usage, "distributed training on CUDA needs a LibTorch built with NCCL");
#endif
  } else {
#ifndef LRA_HAVE_GLOO
    throw Error(ErrorKind::usage, "distributed training on the CPU needs a LibTorch with Gloo's headers (this one "
                                  "lacks gloo/algorithm.h); run the ranks on CUDA (NCCL) or build with Debian's "
                                  "libtorch-dev");
#else
    backend_ = "gloo";
    auto opts = c10d::ProcessGroupGloo::Options::create();
    const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
    opts->devices.push_back(ifname && *ifname ? c10d::ProcessGroupGloo::createDeviceForInterface(ifname)
                            : info.master_addr == "127.0.0.1" || info.master_addr == "localhost"
                                ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                : c10d::ProcessGroupGloo::createDefaultDevice());
    opts->threads = 2;
    pg_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, info.rank, info.world_size, opts);
#endif
  }
}

Distributed::~Distributed() = default;

void Distributed::all_reduce_sum(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes) {
  size_t i = 0;
  while (i < tensors.size()) {
    // A bucket: consecutive tensors of one dtype and device up to bucket_bytes.
    std::vector<at::Tensor> bucket{tensors[i]};
    int64_t bytes = tensors[i].numel() * tensors[i].element_size();
    size_t j = i + 1;
    while (j < tensors.size() && tensors[j].scalar_type() == tensors[i].scalar_type() &&
           tensors[j].device() == tensors[i].device() && bytes + tensors[j].numel() * tensors[j].element_size() <= bucket_bytes) {
      bytes += tensors[j].numel() * tensors[j].element_size();
      bucket.push_back(tensors[j++]);
    }
    std::vector<at::Tensor> flat{at::cat([&] {
      std::vector<at::Tensor> v;
      for (const auto& t : bucket) v.push_back(t.reshape({-1}));
      return v;
    }()).to(device_)};
    pg_->pg->allreduce(flat)->wait();
    int64_t offset = 0;
    for (auto& t : bucket) {
      t.copy_(flat[0].narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
    i = j;
  }
}

void Distributed::barrier() { pg_->pg->barrier()->wait(); }

std::vector<std::string> Distributed::all_gather_text(const std::string& key, const std::string& value) {
  const std::string prefix = "lrahost/" + key + "/";
  pg_->store->set(prefix + std::to_string(info_.rank), std::vector<uint8_t>(value.begin(), value.end()));
  std::vector<std::string> out;
  for (int r = 0; r < info_.world_size; ++r) {
    try {
      const std::vector<uint8_t> v = pg_->store->get(prefix + std::to_string(r));
      out.emplace_back(v.begin(), v.end());
    } catch (const std::exception& e) {
      throw Error(ErrorKind::usage, "rank " + std::to_string(info_.rank) + ": rank " + std::to_string(r) +
                                        " did not share its " + key + " within " + std::to_string(info_.timeout_s) +
                                        " s (" + first_line(e) + ")");
    }
  }
  return out;
}

namespace {

// Leaves of a JSON object as dotted paths.
void flatten(const nlohmann::json& j, const std::string& path, std::map<std::string, nlohmann::json>* out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten(v, path.empty() ? k : path + "." + k, out);
  } else {
    (*out)[path] = j;
  }
}

}  // namespace

std::vector<std::string> identity_disagreements(const std::vector<nlohmann::json>& identities) {
  std::vector<std::string> out;
  if (identities.empty()) return out;
  std::map<std::string, nlohmann::json> lead;
  flatten(identities[0], "", &lead);
  for (size_t r = 1; r < identities.size(); ++r) {
    std::map<std::string, nlohmann::json> other;
    flatten(identities[r], "", &other);
    std::set<std::string> keys;
    for (const auto& [k, v] : lead) keys.insert(k);
    for (const auto& [k, v] : other) keys.insert(k);
    for (const auto& k : keys) {
      const auto a = lead.find(k), b = other.find(k);
      const std::string mine = b == other.end() ? "(none)" : b->second.dump();
      const std::string theirs = a == lead.end() ? "(none)" : a->second.dump();
      if (mine != theirs)
        out.push_back("rank " + std::to_string(r) + "'s " + k + " is " + mine + ", rank 0's is " + theirs);
    }
  }
  return out;
}

void require_identical_ranks(Distributed& dist, const nlohmann::json& identity) {
  std::vector<nlohmann::json> all;
  for (const auto& text : dist.all_gather_text("identity", identity.dump())) {
    try {
      all.push_back(nlohmann::json::parse(text));
    } catch (const std::exception&) {
      all.push_back(nlohmann::json(text));  // a rank of another lrahost build: differs everywhere
    }
  }
  const auto diffs = identity_disagreements(all);
  if (diffs.empty()) return;
  std::string list;
  for (size_t i = 0; i < diffs.size() && i < 12; ++i) list += (i ? "; " : "") + diffs[i];
  if (diffs.size() > 12) list += "; and " + std::to_string(diffs.size() - 12) + " more";
  throw Error(ErrorKind::rules, "rank " + std::to_string(dist.rank()) + " of " + std::to_string(dist.world_size()) +
                                    ": the ranks were not started with the same run, so none trains: " + list +
                                    " (start every rank with the same command, plugin file, data and seed)");
}

}  // namespace lra::host
