// manifest/suites.h — the suites lrahost runs as protocols of their own (LRA,
// Zoology's MQAR, MAD): each suite's name, the release protocol of its
// official manifests and the folder --preset official reads them from. The
// one list: `suite --suite`, the presets, the release registry's protocol of
// a run and the suite summary all read it.
#pragma once

#include <string>
#include <vector>

namespace lra::host {

struct SuiteDef {
  std::string name;          // --suite: "lra", "mqar", "mad"
  std::string protocol;      // the release protocol of its official manifests: "lra-v1", "zoology-v1", "mad-v1"
  std::string official_dir;  // where --preset official reads its manifests: "lra-v1/"
  std::string what;          // one line, for help and messages
  bool lra_average = false;  // scored with LRA's average and the paper's Table 1 rows
  std::vector<std::string> order;  // tasks in the paper's column order; others follow by name
};

const std::vector<SuiteDef>& suite_defs();
// The suite of that name; lra::Error(usage) listing the names otherwise.
const SuiteDef& find_suite(const std::string& name);
// The suite whose official folder holds a manifest of `task`; nullptr for a
// task of none (the forgetting LM, a third-party task).
const SuiteDef* suite_of_task(const std::string& task);
// Its tasks: those with an official manifest in its folder, in its order.
std::vector<std::string> suite_tasks(const SuiteDef& suite);
// "lra, mqar, mad".
std::string suite_names();

}  // namespace lra::host
