#include "leaderboard/reevaluation_report.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json_input.h"
#include "common/key_pair.h"
#include "leaderboard/site_text.h"
#include "reevaluation/reevaluate.h"
#include "reevaluation/reevaluation_signature.h"

namespace lra::host {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {



// A reevaluation.json the host writes is a few KB; more is not one.
constexpr std::size_t kMaxReevaluationBytes = 1 << 20;
// Reasons a failed re-evaluation publishes at most (verify --reevaluate writes a handful).
constexpr std::size_t kMaxReevaluationReasons = 16;
// Shorter strings of the sandbox member are not looked for in reasons (they would match ordinary words).
constexpr std::size_t kMinWithheldBytes = 8;

// The file, read without following a symlink or blocking on a FIFO, bounded;
// nullopt when it is not a regular file of at most kMaxReevaluationBytes.
std::optional<std::string> read_report_bytes(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> bytes;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) <= kMaxReevaluationBytes) {
    bytes.emplace(kMaxReevaluationBytes + 1, '\0');  // one more: a file that grew since fstat is refused too
    std::size_t got = 0;
    for (ssize_t n; got < bytes->size() && (n = ::read(fd, bytes->data() + got, bytes->size() - got)) > 0;)
      got += static_cast<std::size_t>(n);
    bytes->resize(got);
    if (got > kMaxReevaluationBytes) bytes.reset();
  }
  ::close(fd);
  return bytes;
}

// Every string under `j` long enough to be recognised in a reason.
void collect_strings(const json& j, std::vector<std::string>& out) {
  if (j.is_string() && j.get_ref<const std::string&>().size() >= kMinWithheldBytes) out.push_back(j.get<std::string>());
  if (j.is_structured())
    for (const auto& v : j) collect_strings(v, out);
}

}  // namespace

Reevaluation read_reevaluation(const fs::path& result_file, const json& result,
                               const std::map<std::string, std::string>& trusted) {
  Reevaluation r;
  const fs::path file = result_file.parent_path() / kReevaluationFileName;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) return r;
  auto unverified = [&](std::string why) {
    r.state = Reevaluation::State::unverified;
    r.unverified = std::move(why);
    return r;
  };
  const auto bytes = read_report_bytes(file);
  if (!bytes) return unverified("not a regular file of at most 1 MiB");
  json doc;
  try {
    doc = parse_json_input(*bytes);
  } catch (const JsonInputError&) {
    return unverified("not valid JSON");  // the parser's message quotes the file: not published
  }
  const ReevaluationSignatureCheck check = check_reevaluation_signature(doc, trusted);
  if (check.trust != ReevaluationTrust::trusted) {
    // Signed by the author key of whoever builds this page: their own check, said as such.
    if (const auto author = author_public_key(); author && !trusted.count(author->key_id)) {
      const auto own = check_reevaluation_signature(doc, {{author->key_id, author->public_raw}});
      if (own.trust == ReevaluationTrust::trusted) {
        if (doc.value("result_digest", json()) != result.value("digest", json()))
          return unverified("re-evaluated another result");
        if (doc.value("valid", json()) != json(true)) return unverified("its author's re-evaluation found it invalid");
        r.state = Reevaluation::State::by_author;
        r.verifier = own.key_id;
        return r;
      }
    }
    return unverified(check.unverified);
  }
  r.verifier = check.key_id;
  // Bound to the result: a genuine report copied beside another result says nothing about it.
  if (doc.value("result_digest", json()) != result.value("digest", json()))
    return unverified("re-evaluated another result");
  const json valid = doc.value("valid", json());
  if (!valid.is_boolean()) return unverified("malformed report (valid is not a boolean)");
  if (valid.get<bool>()) {
    r.state = Reevaluation::State::passed;
    const json priv = doc.value("private", json());
    const json flagged = priv.is_object() ? priv.value("flagged", json()) : json();
    r.private_checked = flagged.is_boolean() && !flagged.get<bool>();
    const json test = doc.value("test", json());
    const json published = test.is_object() ? test.value("published_accuracy", json()) : json();
    if (published.is_number() && published.get<double>() >= 0 && published.get<double>() <= 1)
      r.published_accuracy = published.get<double>();
    return r;
  }
  r.state = Reevaluation::State::failed;
  // The verifier's reasons, but never the judged code's output some of them quote.
  std::vector<std::string> withheld;
  if (doc.contains("sandbox")) collect_strings(doc["sandbox"], withheld);
  const json reasons = doc.value("reasons", json::array());
  if (reasons.is_array())
    for (const auto& why : reasons) {
      if (!why.is_string()) continue;
      if (r.reasons.size() == kMaxReevaluationReasons) {
        r.reasons.push_back("re-evaluation: (" + std::to_string(reasons.size() - kMaxReevaluationReasons) +
                            " more reasons in " + file.string() + ")");
        break;
      }
      std::string text = why.get<std::string>();
      for (const auto& secret : withheld)
        for (std::size_t at; (at = text.find(secret)) != std::string::npos;)
          text.replace(at, secret.size(), "[sandbox output withheld]");
      r.reasons.push_back(site::bounded("re-evaluation: " + text, site::kMaxTextBytes));
    }
  if (r.reasons.empty()) r.reasons.push_back("re-evaluation failed (" + file.string() + ")");
  r.reasons.push_back("re-evaluation signed by trusted verifier " + r.verifier);
  return r;
}

}  // namespace lra::host
