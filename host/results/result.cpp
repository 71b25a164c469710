#include "results/result.h"

#include <algorithm>
#include <cmath>
#include <system_error>

#include "common/atomic_file.h"
#include "common/sha256.h"
#include "lra/status.h"

namespace lra::host {
namespace {

std::string canonical_dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string compute_digest(const nlohmann::json& result) {
  // The signature covers the digest, so neither is part of what the digest covers.
  if (result.is_object() && (result.contains("digest") || result.contains("signature"))) {
    nlohmann::json copy = result;
    copy.erase("digest");
    copy.erase("signature");
    return "sha256:" + sha256_hex(canonical_dump(copy));
  }
  return "sha256:" + sha256_hex(canonical_dump(result));
}

nlohmann::json seal(nlohmann::json result) {
  if (!result.is_object()) {
    throw lra::Error(lra::ErrorKind::internal,
                     std::string("cannot seal a result that is a JSON ") + result.type_name() +
                         ", not an object");
  }
  result["digest"] = compute_digest(result);
  return result;
}

std::filesystem::path write_result(const std::filesystem::path& dir, const nlohmann::json& sealed) {
  const std::filesystem::path file = dir / kResultFileName;
  if (!sealed.is_object() || !sealed.contains("digest") || !sealed["digest"].is_string()) {
    throw lra::Error(lra::ErrorKind::internal,
                     "refusing to write '" + file.string() + "': the result is not sealed (no digest)");
  }
  const std::string recorded = sealed["digest"].get<std::string>();
  const std::string actual = compute_digest(sealed);
  if (recorded != actual) {
    throw lra::Error(lra::ErrorKind::internal, "refusing to write '" + file.string() +
                                                   "': the result changed after it was sealed (digest " +
                                                   recorded + " != recomputed " + actual + ")");
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw lra::Error(lra::ErrorKind::internal,
                     "cannot create the output folder '" + dir.string() + "': " + ec.message());
  }
  write_file_atomic(file,
                    sealed.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  return file;
}


}  // namespace lra::host
