// host/reevaluation: what a maintainer's machine relies on when it opens a
// submission — the bundle reader refuses anything but the files it expects,
// the sandbox confines what runs in it, and the statistics are right.
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include <gtest/gtest.h>

#include "../support/raw_tar.h"
#include "common/sha256.h"
#include "lra/status.h"
#include "reevaluation/bundle.h"
#include "isolation/cpu_turns.h"
#include "isolation/mixer_wire.h"
#include "reevaluation/private_set.h"
#include "reevaluation/sequence_scoring.h"
#include "train/trainer.h"

namespace lra::host {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using lra::test::RawTar;

struct Tmp {
  fs::path path;
  // in_tmp false: under the working directory (the build tree), a folder this user can write.
  explicit Tmp(bool in_tmp = true) {
    std::string t = (in_tmp ? std::string("/tmp") : fs::current_path().string()) + "/lra-reeval-test-XXXXXX";
    path = mkdtemp(t.data());
  }
  ~Tmp() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}


// bundle.json for one run "r1" whose files are `files` (name -> bytes); the
// run's plugin is the one `files` holds, else a name no file has.
json index_for(const std::map<std::string, std::string>& files) {
  json listed = json::object(), sizes = json::object();
  std::string plugin = "plugins/" + std::string(64, 'f') + ".so";
  for (const auto& [name, bytes] : files) {
    listed[name] = sha256_hex(bytes);
    sizes[name] = bytes.size();
    if (name.rfind("plugins/", 0) == 0) plugin = name;
  }
  return {{"schema", kBundleSchema}, {"runs", json::array({{{"dir", "r1"}, {"plugin", plugin}}})},
          {"files", listed}, {"sizes", sizes}};
}

TEST(Bundle, RoundTripKeepsEveryByteAndTheIndex) {
  Tmp t;
  write(t.path / "src/result.json", "{\"a\":1}");
  write(t.path / "src/model.pt", std::string(3 << 20, '\x07'));  // larger than one read buffer
  const std::string plugin_bytes = "\x7f" "ELF fake";
  write(t.path / "src/p.so", plugin_bytes);
  const std::string plugin_name = "plugins/" + sha256_hex(plugin_bytes) + ".so";
  json idx = index_for({{"runs/r1/result.json", "{\"a\":1}"},
                        {"runs/r1/model.pt", std::string(3 << 20, '\x07')},
                        {plugin_name, plugin_bytes}});
  write_bundle(t.path / "b.tar", idx,
               {{"runs/r1/result.json", t.path / "src/result.json"},
                {"runs/r1/model.pt", t.path / "src/model.pt"},
                {plugin_name, t.path / "src/p.so"}});
  const json back = extract_bundle(t.path / "b.tar", t.path / "out");
  EXPECT_EQ(back, idx);
  EXPECT_EQ(read(t.path / "out/runs/r1/model.pt"), std::string(3 << 20, '\x07'));
  EXPECT_EQ(read(t.path / "out" / plugin_name), plugin_bytes);
  // An existing bundle is never overwritten.
  try {
    write_bundle(t.path / "b.tar", idx, {});
    FAIL() << "overwrote an existing bundle";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
  }
}

TEST(Bundle, RefusesNamesTypesAndContentItDoesNotExpect) {
  struct Case {
    const char* what;
    std::function<void(RawTar&)> fill;
    const char* message;
  };
  const std::string good = "{}", model = "m", code = "code";
  const std::string plugin = "plugins/" + sha256_hex(code) + ".so";
  const std::map<std::string, std::string> run = {
      {"runs/r1/result.json", good}, {"runs/r1/model.pt", model}, {plugin, code}};
  const std::string index = index_for(run).dump();
  const std::vector<Case> cases = {
      {"parent path", [&](RawTar& t) { t.add("bundle.json", index); t.add("../evil.txt", "x"); },
       "not a name a bundle may hold"},
      {"absolute path", [&](RawTar& t) { t.add("bundle.json", index); t.add("/etc/evil", "x"); },
       "not a name a bundle may hold"},
      {"hidden run folder", [&](RawTar& t) { t.add("bundle.json", index); t.add("runs/../x/result.json", "x"); },
       "not a name a bundle may hold"},
      {"symlink",
       [&](RawTar& t) {
         t.add("bundle.json", index);
         t.add("runs/r1/model.pt", "", AE_IFLNK, "/etc/passwd");
       },
       "not a regular file"},
      {"duplicate",
       [&](RawTar& t) {
         t.add("bundle.json", index);
         t.add("runs/r1/result.json", good);
         t.add("runs/r1/result.json", good);
       },
       "appears twice"},
      {"unlisted file",
       [&](RawTar& t) {
         t.add("bundle.json", index);
         t.add("runs/r2/result.json", good);
       },
       "is not listed in bundle.json"},
      {"hash mismatch",
       [&](RawTar& t) {
         t.add("bundle.json", index);
         t.add("runs/r1/result.json", "[]");  // the listed size, other bytes
       },
       "bundle.json says"},
      {"listed but absent",
       [&](RawTar& t) {
         t.add("bundle.json", index);
         t.add("runs/r1/result.json", good);
       },
       "which the archive does not hold"},
      {"plugin named by another hash",
       [&](RawTar& t) {
         const std::string name = "plugins/" + std::string(64, 'a') + ".so";
         t.add("bundle.json", index_for({{"runs/r1/result.json", good}, {"runs/r1/model.pt", model}, {name, code}}).dump());
         t.add(name, code);
       },
       "named by a SHA-256 its bytes do not have"},
      {"a file of no run listed",
       [&](RawTar& t) {
         json idx = index_for(run);
         idx["files"]["runs/r9/result.json"] = sha256_hex(good);
         idx["sizes"]["runs/r9/result.json"] = good.size();
         t.add("bundle.json", idx.dump());
       },
       "which is not a file of a run it lists"},
      {"no sizes",
       [&](RawTar& t) {
         json idx = index_for(run);
         idx.erase("sizes");
         t.add("bundle.json", idx.dump());
       },
       "'sizes' must be an object"},
      {"no index", [&](RawTar& t) { t.add("runs/r1/result.json", good); }, "no bundle.json as its first entry"},
      {"index not first",
       [&](RawTar& t) {
         t.add("runs/r1/result.json", good);
         t.add("bundle.json", index);
       },
       "no bundle.json as its first entry"},
      {"index not json", [&](RawTar& t) { t.add("bundle.json", "{not json"); }, "not valid JSON"},
  };
  for (const auto& c : cases) {
    Tmp t;
    { RawTar tar(t.path / "b.tar"); c.fill(tar); }
    try {
      extract_bundle(t.path / "b.tar", t.path / "out");
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::data) << c.what;
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.what << ": " << e.what();
    }
    EXPECT_FALSE(fs::exists(t.path / "evil.txt")) << c.what;
    // A refused bundle leaves nothing behind: no destination, no staging folder.
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(t.path)) left.push_back(e.path().filename().string());
    EXPECT_EQ(left, std::vector<std::string>{"b.tar"}) << c.what;
  }
  Tmp t;
  write(t.path / "not.tar", "plain text, not an archive");
  EXPECT_THROW(extract_bundle(t.path / "not.tar", t.path / "out"), Error);
}

// Issue 43: the wire between the verifier and the mixer process. What one
// side writes the other reads back exactly; what a hostile process could
// send instead (cut short, an unknown dtype, too many dimensions, more
// elements than allowed, bytes after the end) is an error in the verifier's
// words, never a crash or an allocation of the claimed size.
TEST(MixerWire, TensorsSpecsAndFieldsRoundTrip) {
  wire::Writer w;
  lra::MixerSpec spec;
  spec.d_model = 64, spec.heads = 4, spec.qkv_dim = 32, spec.max_len = 2001, spec.causal = true;
  spec.attention_dropout = 0.1, spec.layer_index = 3, spec.seed = ~uint64_t{0} - 5, spec.rotary_base = 10000;
  w.spec(spec);
  const at::Tensor x = at::randn({2, 3, 4});
  const at::Tensor mask = at::rand({2, 3}).gt(0.5);
  w.tensors({{"proj.q.weight", true, x.requires_grad_(true)}, {"gate", false, mask}});
  w.str("name");
  wire::Reader r(w.flat(), "test message");
  const lra::MixerSpec back = r.spec();
  EXPECT_EQ(back.d_model, 64);
  EXPECT_EQ(back.heads, 4);
  EXPECT_EQ(back.qkv_dim, 32);
  EXPECT_EQ(back.max_len, 2001);
  EXPECT_TRUE(back.causal);
  EXPECT_EQ(back.attention_dropout, 0.1);
  EXPECT_EQ(back.layer_index, 3);
  EXPECT_EQ(back.seed, ~uint64_t{0} - 5);
  EXPECT_EQ(back.rotary_base, 10000);
  const auto ts = r.tensors(16, 1000);
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_EQ(ts[0].name, "proj.q.weight");
  EXPECT_TRUE(ts[0].parameter);
  EXPECT_TRUE(ts[0].tensor.requires_grad());
  EXPECT_TRUE(ts[0].tensor.equal(x.detach()));
  EXPECT_FALSE(ts[1].parameter);
  EXPECT_EQ(ts[1].tensor.scalar_type(), at::kBool);
  EXPECT_TRUE(ts[1].tensor.equal(mask));
  EXPECT_EQ(r.str(16), "name");
  r.end();
}

// A decoding state crosses whole (undefined tensors kept in place) and
// within its bounds: more tensors than allowed is refused, naming it.
TEST(MixerWire, ADecodingStateRoundTripsAndIsBounded) {
  const at::Tensor k = at::randn({1, 5, 8}), v = at::randn({1, 5, 8});
  wire::Writer w;
  w.state({k, at::Tensor(), v});
  wire::Reader r(w.flat(), "decode_step");
  const auto back = r.state(4, 100);
  r.end();
  ASSERT_EQ(back.size(), 3u);
  EXPECT_TRUE(back[0].equal(k));
  EXPECT_FALSE(back[1].defined());
  EXPECT_TRUE(back[2].equal(v));
  wire::Reader too_many(w.flat(), "decode_step");
  try {
    too_many.state(2, 100);
    FAIL() << "a state of 3 tensors passed a bound of 2";
  } catch (const lra::Error& e) {
    EXPECT_NE(std::string(e.what()).find("a decoding state of more than 2 tensors"), std::string::npos) << e.what();
  }
}

TEST(MixerWire, AdversarialMalformedBodiesAreRefusedInTheVerifiersWords) {
  wire::Writer ok;
  ok.tensor(at::ones({4, 4}));
  const std::string good = ok.flat();
  auto refused = [](const std::string& body, int64_t max_elements = 1 << 20) {
    try {
      wire::Reader r(body, "answer to forward");
      (void)r.tensor(max_elements);
      r.end();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::plugin);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(refused(good), "");
  EXPECT_NE(refused(good.substr(0, good.size() - 1)).find("malformed answer to forward (it ends early)"),
            std::string::npos);
  EXPECT_NE(refused(good + "x").find("bytes follow its last field"), std::string::npos);
  std::string bad_type = good;
  bad_type[0] = 99;
  EXPECT_NE(refused(bad_type).find("unknown dtype"), std::string::npos);
  std::string many_dims = good;
  many_dims[1] = 9;
  EXPECT_NE(refused(many_dims).find("more than 8 dimensions"), std::string::npos);
  EXPECT_NE(refused(good, 15).find("over 15 elements"), std::string::npos);
  // A claimed size of 2^62 elements is refused before anything is allocated.
  wire::Writer huge;
  huge.u8(0), huge.u8(2), huge.i64(int64_t{1} << 31), huge.i64(int64_t{1} << 31);
  EXPECT_NE(refused(huge.flat(), int64_t{1} << 40).find("over"), std::string::npos);
  // A bool tensor's bytes other than 0 and 1 come back as true, not undefined behaviour.
  wire::Writer b;
  b.tensor(at::zeros({3}, at::kBool));
  std::string bools = b.flat();
  bools[bools.size() - 1] = 7;
  wire::Reader rb(bools, "mask");
  EXPECT_TRUE(rb.tensor(10).to(at::kLong).equal(at::tensor(std::vector<int64_t>{0, 0, 1})));
}

TEST(MixerWire, MessagesCrossASocketAndAClosedOrSilentPeerIsAnError) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  wire::send_message(pair[0], wire::Op::hello, "abc");
  const auto m = wire::receive_message(pair[1], 16, 1000);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->op, wire::Op::hello);
  EXPECT_EQ(std::string(m->body.data(), m->body.size()), "abc");
  // Over the receiver's bound: refused from the header alone.
  wire::send_message(pair[0], wire::Op::ok, std::string(64, 'x'));
  EXPECT_THROW(wire::receive_message(pair[1], 16, 1000), Error);
  // Nothing comes: the time limit.
  int quiet[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, quiet), 0);
  try {
    (void)wire::receive_message(quiet[1], 16, 100);
    ADD_FAILURE() << "no timeout";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did not answer within its time limit"), std::string::npos);
  }
  // The peer closed before a message: nullopt; writing to it: an error, not SIGPIPE.
  close(quiet[0]);
  EXPECT_FALSE(wire::receive_message(quiet[1], 16, 100).has_value());
  EXPECT_THROW(wire::send_message(quiet[1], wire::Op::ok, std::string(1 << 20, 'x')), Error);
  for (int fd : {pair[0], pair[1], quiet[1]}) close(fd);
}

// While the verifier takes turns with a mixer process its OpenBLAS workers
// sleep right after each call; afterwards the setting it found is back, and
// BLAS computes the same values throughout (its workers restart twice).
TEST(CpuTurns, WorkersSleepDuringTheTurnsAndTheSettingFoundIsRestored) {
  if (!CpuTurns::workers_can_sleep()) GTEST_SKIP() << "this build's BLAS is not OpenBLAS: turns are taken on one thread";
  const char* kVar = "OPENBLAS_THREAD_TIMEOUT";
  auto value = []() -> std::string { const char* v = std::getenv("OPENBLAS_THREAD_TIMEOUT"); return v ? v : "(unset)"; };
  configure_cpu_threads(2);
  const at::Tensor a = at::rand({300, 200}), b = at::rand({200, 250});
  const at::Tensor expected = at::mm(a, b);
  for (const char* found : {static_cast<const char*>(nullptr), "20"}) {
    if (found) setenv(kVar, found, 1);
    else unsetenv(kVar);
    {
      const CpuTurns turns(2);
      EXPECT_EQ(value(), "4");
      EXPECT_TRUE(at::mm(a, b).equal(expected));
    }
    EXPECT_EQ(value(), found ? found : "(unset)");
    EXPECT_TRUE(at::mm(a, b).equal(expected));
  }
  unsetenv(kVar);
  {
    const CpuTurns one(1);  // one thread: no workers to put to sleep
    EXPECT_EQ(value(), "(unset)");
  }
}

TEST(TwoProportionTest, MatchesTheTextbookValues) {
  // 900/1000 against 850/1000: pooled 0.875, se = sqrt(.875 * .125 * .002) = 0.0147902, z = 3.3806.
  const auto t = two_proportion_test(900, 1000, 850, 1000);
  EXPECT_NEAR(t.gap, 0.05, 1e-12);
  EXPECT_NEAR(t.z, 3.3806, 1e-4);
  EXPECT_NEAR(t.p_value, 3.617e-4, 2e-6);
  // Equal accuracies: no evidence at all; a private set better than public: p above 1/2.
  EXPECT_NEAR(two_proportion_test(500, 1000, 500, 1000).p_value, 0.5, 1e-12);
  EXPECT_GT(two_proportion_test(400, 1000, 500, 1000).p_value, 0.99);
}

TEST(PrivateSet, ScalesTheGeneratorsSizeKeysAndReplacesOnlyTheSeed) {
  const lra::Params listops = {{"train_size", int64_t{96000}}, {"val_size", int64_t{2000}},
                               {"test_size", int64_t{2000}}, {"max_depth", int64_t{10}}, {"seed", int64_t{0}}};
  const auto p = private_set_params(listops, 12345, 500);
  ASSERT_TRUE(p);
  EXPECT_EQ(std::get<int64_t>(p->at("test_size")), 500);
  EXPECT_EQ(std::get<int64_t>(p->at("train_size")), 1);
  EXPECT_EQ(std::get<int64_t>(p->at("seed")), 12345);
  EXPECT_EQ(std::get<int64_t>(p->at("max_depth")), 10);
  const lra::Params pathfinder = {{"images", int64_t{200000}}, {"contour_length", int64_t{14}}, {"seed", int64_t{0}}};
  const auto q = private_set_params(pathfinder, 7, 2000);
  ASSERT_TRUE(q);
  EXPECT_EQ(std::get<int64_t>(q->at("images")), 2000);
  // A downloaded task (its seed only picks subsets) has no private set.
  const lra::Params text = {{"train_examples", int64_t{0}}, {"eval_examples", int64_t{0}}, {"seed", int64_t{0}}};
  EXPECT_FALSE(private_set_params(text, 7, 2000));
}

}  // namespace
}  // namespace lra::host

// A sequence task's re-evaluation (reevaluation/sequence_scoring.h): examples
// are clusters of positions. Honest work passes: two sets from one
// distribution where each example is wholly right or wholly wrong (perfectly
// correlated positions) give no flag, though a per-position test would call
// the same chance gap significant; a real gap is flagged.
namespace {

lra::host::PositionCounts clustered(int64_t examples, int64_t positions_each, int64_t right_examples) {
  lra::host::PositionCounts c;
  for (int64_t i = 0; i < examples; ++i) {
    c.positions.push_back(positions_each);
    c.correct.push_back(i < right_examples ? positions_each : 0);
  }
  return c;
}

}  // namespace

TEST(SequenceScoring, ExamplesAreClustersSoAChanceGapIsNotFlagged) {
  using namespace lra::host;
  // 1,000 examples of 50 positions each; 520 vs 480 examples wholly right: a chance gap of 4 points.
  const auto pub = clustered(1000, 50, 520), priv = clustered(1000, 50, 480);
  const ProportionTest t = clustered_gap_test(pub, priv);
  EXPECT_NEAR(t.gap, 0.04, 1e-12);
  EXPECT_GT(t.p_value, 0.02);  // about 0.037: two-proportion test over 1,000 examples each
  const ProportionTest naive =
      two_proportion_test(total_correct(pub), total_positions(pub), total_correct(priv), total_positions(priv));
  EXPECT_LT(naive.p_value, 1e-20);  // what counting positions as independent would claim
  // A real gap is flagged: 90% against 50%.
  EXPECT_LT(clustered_gap_test(clustered(1000, 50, 900), priv).p_value, 1e-50);
  EXPECT_DOUBLE_EQ(clustered_gap_test(priv, priv).p_value, 0.5);
  // The fresh-weights side: at the majority rate, not flagged; far above it, flagged.
  EXPECT_GT(clustered_above_rate_test(clustered(1000, 50, 100), 0.1).p_value, 0.4);
  EXPECT_LT(clustered_above_rate_test(clustered(1000, 50, 300), 0.1).p_value, 1e-20);
  EXPECT_EQ(clustered_above_rate_test(clustered(1000, 50, 0), 0.1).p_value, 1.0);
}

TEST(SequenceScoring, TargetsFollowTheSecretOrderAndCountsComeBack) {
  using namespace lra::host;
  lra::Split s;
  s.tokens = {1, 2, 3, 4, 5, 6};
  s.offsets = {0, 1, 3, 6};
  lra::SplitTargets t;
  t.targets = {-100, 7, 8, -100, 9, 10};
  t.cells = {0, 1, 1};
  const std::vector<size_t> order = {2, 0, 1};
  const auto p = permuted_targets(t, s, order);
  EXPECT_EQ(p.targets, (std::vector<int32_t>{-100, 9, 10, -100, 7, 8}));
  EXPECT_EQ(p.cells, (std::vector<int32_t>{1, 0, 1}));
  PositionCounts shuffled{{2, 0, 1}, {2, 1, 2}};  // counts of shuffled examples 0, 1, 2 = examples 2, 0, 1
  const auto back = unshuffled_counts(shuffled, order, 0, 3);
  EXPECT_EQ(back.correct, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(back.positions, (std::vector<int64_t>{1, 2, 2}));
  const auto tail = unshuffled_counts(shuffled, order, 1, 3);
  EXPECT_EQ(tail.correct, (std::vector<int64_t>{1, 2}));
  // An in-memory task keeps its sizes; only the seed is secret.
  const auto params = private_set_params({{"seed", int64_t{123}}, {"test_grid", std::string("64x4x10")}}, 99, 5, true);
  ASSERT_TRUE(params.has_value());
  EXPECT_EQ(std::get<int64_t>(params->at("seed")), 99);
  EXPECT_EQ(std::get<std::string>(params->at("test_grid")), "64x4x10");
}

// judge_sequence_passes in both directions: honest counts pass; a public split
// far above the private set, a raised test accuracy, or fresh weights above
// the majority target are each refused, naming what.
TEST(SequenceScoring, TheVerdictRefusesEachForgeryAndPassesHonestCounts) {
  using namespace lra::host;
  const size_t n = 400;  // 200 public, 200 private, interleaved
  std::vector<size_t> order(n);
  for (size_t j = 0; j < n; ++j) order[j] = (j % 2) ? 200 + j / 2 : j / 2;
  auto shuffled = [&](int64_t public_right, int64_t private_right) {
    PositionCounts c;
    for (size_t j = 0; j < n; ++j) {
      const bool pub = order[j] < 200;
      const int64_t i = static_cast<int64_t>(pub ? order[j] : order[j] - 200);
      c.positions.push_back(4);
      c.correct.push_back(i < (pub ? public_right : private_right) ? 4 : 0);
    }
    return c;
  };
  auto judge = [&](const PositionCounts& trained, const PositionCounts& fresh, double recorded) {
    RunReevaluation r;
    const nlohmann::json result = {{"metrics", {{"test_accuracy", recorded}, {"test_positions", 800}}},
                                   {"task", {{"examples", {{"test", 200}}}}}};
    judge_sequence_passes({trained, fresh, order, 200, 0.05}, {0.01, 0.01, true, true, "cpu", "float32"}, result, r);
    return r;
  };
  const PositionCounts none = shuffled(0, 0);
  const auto honest = judge(shuffled(150, 146), none, 0.75);
  EXPECT_TRUE(honest.reasons.empty()) << honest.reasons.front();
  EXPECT_EQ(honest.report["test"]["correct"], 600);
  EXPECT_EQ(honest.report["private"]["examples"], 200);
  const auto memorised = judge(shuffled(190, 100), none, 0.95);
  ASSERT_EQ(memorised.reasons.size(), 1u);
  EXPECT_NE(memorised.reasons[0].find("likely trained or selected on the public test split"), std::string::npos);
  const auto raised = judge(shuffled(150, 146), none, 0.80);
  ASSERT_EQ(raised.reasons.size(), 1u);
  EXPECT_NE(raised.reasons[0].find("metrics.test_accuracy is 80.00%, the submitted model scores 75.00%"),
            std::string::npos)
      << raised.reasons[0];
  const auto gated = judge(shuffled(150, 146), shuffled(100, 100), 0.75);
  ASSERT_EQ(gated.reasons.size(), 1u);
  EXPECT_NE(gated.reasons[0].find("predictions do not depend on the trained weights"), std::string::npos);
}
