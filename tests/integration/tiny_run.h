// A ListOps run small enough for a test (seconds on 2 cores).
#pragma once

#include <string>

namespace lra::test {

// The --set overrides that make a smoke ListOps run tiny.
inline std::string tiny_sets() {
  return " --set train.steps=12 --set train.eval_every=5 --set train.warmup=4"
         " --set data.train_size=160 --set data.val_size=40 --set data.test_size=40"
         " --set data.min_length=8 --set data.max_length=48 --set data.max_depth=3"
         " --set model.max_len=48 --set model.layers=1 --set model.d_model=32 --set model.heads=2"
         " --set model.qkv_dim=32 --set model.ffn_dim=64";
}

inline std::string tiny_run_args(const std::string& data_dir, const std::string& out) {
  return "run --plugin transformer --task listops --preset smoke --threads 1 --data-dir " + data_dir + " --out " + out +
         tiny_sets();
}

}  // namespace lra::test
