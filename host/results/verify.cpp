// verify_result_json runs the check stages (results/verify_checks.h) in
// order and assembles their reasons into the report; verify_result_file
// reads the file first and checks the weights beside it and a Python
// mixer's sources where the run found them.
#include "results/verify.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "common/json_input.h"
#include "results/verify_checks.h"

namespace lra::host {
namespace {

using nlohmann::json;
using namespace verify_internal;

VerifyReport not_a_result_object(const json& result) {
  VerifyReport report;
  report.readable = false;
  report.valid = false;
  report.reasons.push_back(std::string("not a result file: the JSON value is ") + describe(result) +
                           ", expected an object");
  return report;
}

// The host's own verdict ("valid", "invalid_reasons") must be consistent and
// agree with the checks made so far; returns what the file claims.
bool check_host_verdict(Checker& c, const ResultFields& f) {
  const std::size_t problems = c.reasons.size();
  bool claimed_valid = false;
  if (f.valid && f.invalid_reasons) {
    claimed_valid = f.valid->get<bool>();
    if (claimed_valid && !f.invalid_reasons->empty()) {
      c.fail("valid is true but invalid_reasons is not empty: " + show(*f.invalid_reasons));
    } else if (!claimed_valid && f.invalid_reasons->empty()) {
      c.fail("valid is false but invalid_reasons is empty (the host must say why)");
    }
    if (!claimed_valid) {
      for (const auto& r : *f.invalid_reasons) c.fail("recorded as invalid by the host: " + r.get<std::string>());
    }
  }
  if (claimed_valid && problems > 0) {
    c.fail("the file claims valid = true, but " + std::to_string(problems) +
           (problems == 1 ? " check fails" : " checks fail"));
  }
  return claimed_valid;
}

}  // namespace

VerifyReport verify_result_json(const json& result, const OfficialLookup& official) {
  if (!result.is_object()) return not_a_result_object(result);
  VerifyReport report;
  report.readable = true;
  Checker c(result);

  check_schema(c);
  const ResultFields fields = check_result_fields(c);
  check_digest(c, result);
  report.signed_by = check_result_signature(c, result);
  check_model_field(c);
  check_param_budget(c, fields);
  check_optimizer_groups(c, result, fields);
  report.configuration = check_reference_configuration(c, result);
  check_reference_settings_table(c, result);
  report.protocol = check_pretraining(c, result);
  const bool closed = check_division(c, result, fields, official, report.release);
  report.division = closed ? "closed" : "open";
  const bool claimed_valid = check_host_verdict(c, fields);

  report.valid = claimed_valid && c.reasons.empty();
  report.reasons = std::move(c.reasons);
  return report;
}

VerifyReport verify_result_file(const std::filesystem::path& file, const OfficialLookup& official) {
  auto unreadable = [&](std::string reason) {
    VerifyReport r;
    r.path = file.string();
    r.reasons.push_back(std::move(reason));
    return r;
  };
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) return unreadable("cannot read: it is a directory");
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return unreadable(std::string("cannot read: ") + std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return unreadable("cannot read: I/O error");

  json parsed;
  try {
    parsed = parse_json_input(ss.str());
  } catch (const JsonInputError& e) {
    return unreadable(std::string("not valid JSON: ") + e.what());
  }
  VerifyReport report = verify_result_json(parsed, official);
  report.path = file.string();
  check_model_file(parsed, file, report);
  check_pretrained_weights_file(parsed, file, report);
  check_python_source_files(parsed, file, report);
  return report;
}

nlohmann::json to_json(const VerifyReport& r) {
  return {{"path", r.path},
          {"readable", r.readable},
          {"division", r.division.empty() ? json(nullptr) : json(r.division)},
          {"valid", r.valid},
          {"signed_by", r.signed_by.empty() ? json(nullptr) : json(r.signed_by)},
          {"reference_configuration", r.configuration.empty() ? json(nullptr) : json(r.configuration)},
          {"protocol", r.protocol.empty() ? json(nullptr) : json(r.protocol)},
          {"release", r.release ? json(r.release->release) : json(nullptr)},
          {"release_note", r.release && !r.release->note.empty() ? json(r.release->note) : json(nullptr)},
          {"superseded_by",
           r.release && !r.release->superseded_by.empty() ? json(r.release->superseded_by) : json(nullptr)},
          {"reasons", r.reasons},
          {"notes", r.notes}};
}

}  // namespace lra::host
