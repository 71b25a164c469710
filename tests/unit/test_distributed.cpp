// rank_info_from: the rendezvous facts from RANK/WORLD_SIZE/... (torchrun,
// hand-set), the Slurm variables (srun), or nothing (one process).
#include <gtest/gtest.h>

#include "distributed/distributed.h"
#include "lra/status.h"

using lra::host::rank_info_from;

TEST(RankInfo, NoVariablesIsOneProcess) {
  const auto r = rank_info_from({{"HOME", "/root"}});
  EXPECT_EQ(r.world_size, 1);
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.source, "single process");
}

TEST(RankInfo, TorchVariablesWinOverSlurm) {
  const auto r = rank_info_from({{"WORLD_SIZE", "4"}, {"RANK", "3"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "node7"},
                                 {"MASTER_PORT", "23456"}, {"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "5"}});
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.master_addr, "node7");
  EXPECT_EQ(r.master_port, 23456);
  EXPECT_EQ(r.source, "torch environment");
  EXPECT_FALSE(r.agent_store);
}

TEST(RankInfo, SlurmTasksAreRanks) {
  const auto r = rank_info_from({{"SLURM_NTASKS", "2"}, {"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "1"},
                                 {"MASTER_ADDR", "gpu01"}});
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.master_port, 29500);  // the default
  EXPECT_EQ(r.source, "slurm");
}

TEST(RankInfo, TorchrunsAgentStoreIsJoinedNotServed) {
  const auto r = rank_info_from({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"TORCHELASTIC_RUN_ID", "none"},
                                 {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  EXPECT_TRUE(r.agent_store);
  EXPECT_EQ(r.source, "torchrun");
}

// Issue 18: the start-up wait is bounded; LRA_DIST_TIMEOUT sets it (seconds).
TEST(RankInfo, RendezvousTimeoutFromEnvironment) {
  EXPECT_EQ(rank_info_from({{"WORLD_SIZE", "2"}, {"RANK", "0"}}).timeout_s, 300);
  EXPECT_EQ(rank_info_from({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"LRA_DIST_TIMEOUT", "7"}}).timeout_s, 7);
  EXPECT_EQ(rank_info_from({{"SLURM_NTASKS", "2"}, {"SLURM_PROCID", "0"}, {"LRA_DIST_TIMEOUT", "12"}}).timeout_s, 12);
  for (const std::string bad : {"0", "-3", "five", "1e9", "99999999999"}) {
    try {
      rank_info_from({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"LRA_DIST_TIMEOUT", bad}});
      ADD_FAILURE() << "accepted LRA_DIST_TIMEOUT=" << bad;
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
      EXPECT_NE(std::string(e.what()).find("LRA_DIST_TIMEOUT=" + bad), std::string::npos) << e.what();
    }
  }
}

TEST(RankInfo, MalformedValuesNameTheVariable) {
  for (const auto& env : std::vector<std::map<std::string, std::string>>{
           {{"WORLD_SIZE", "two"}, {"RANK", "0"}},
           {{"WORLD_SIZE", "2"}, {"RANK", "-1"}},
           {{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_PORT", "70000"}}}) {
    try {
      rank_info_from(env);
      ADD_FAILURE() << "accepted " << env.begin()->second;
    } catch (const lra::Error& e) {
      EXPECT_EQ(e.kind(), lra::ErrorKind::usage);
      const std::string msg = e.what();
      EXPECT_TRUE(msg.find("WORLD_SIZE=two") != std::string::npos || msg.find("RANK=-1") != std::string::npos ||
                  msg.find("MASTER_PORT=70000") != std::string::npos)
          << msg;
    }
  }
  EXPECT_THROW(rank_info_from({{"WORLD_SIZE", "2"}, {"RANK", "2"}}), lra::Error);  // rank not below the world
}

// Ranks agree or nobody trains: each differing field is named, per rank.
TEST(Distributed, IdentityDisagreementsNameEachField) {
  const nlohmann::json a = {{"config", {{"train", {{"lr", 0.05}, {"steps", 60}}}}}, {"seed", 0}, {"plugin", "t"}};
  nlohmann::json b = a;
  EXPECT_TRUE(lra::host::identity_disagreements({a, b, b}).empty());
  b["config"]["train"]["lr"] = 5.0;
  b["seed"] = 1;
  const auto d = lra::host::identity_disagreements({a, a, b});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], "rank 2's config.train.lr is 5.0, rank 0's is 0.05");
  EXPECT_EQ(d[1], "rank 2's seed is 1, rank 0's is 0");
  nlohmann::json c = a;
  c.erase("plugin");
  EXPECT_EQ(lra::host::identity_disagreements({a, c}).at(0), "rank 1's plugin is (none), rank 0's is \"t\"");
}
