// The closed-division claim checked against the protocol itself, not against
// what the result file says about it: given the released official manifest
// the result names by hash, its recorded configuration must be that
// manifest's (only train.seed, the trial index, may differ), its split sizes
// the official ones, and for generated tasks its data fingerprint the
// official data's. Anyone can re-seal an edited file's digest; none of these
// can be edited into agreement without making the run the official one.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/verify.h"

namespace lra::host {

// Appends one reason per violated condition (naming the field, the value
// found and the value the manifest fixes); returns whether all hold.
bool check_closed_against_protocol(const nlohmann::json& result, const OfficialManifest& official,
                                   std::vector<std::string>* reasons);

}  // namespace lra::host
