// manifest/manifest_text.h — string helpers of the manifest code (internal,
// not part of the public API): quoting, numbers, typo hints
// (lists and trimming: common/text.h).
#pragma once

#include <string>
#include <vector>

namespace lra::host::manifest_detail {

// Invalid UTF-8 (a --set value is raw command-line bytes) is shown as U+FFFD
// instead of throwing nlohmann's type_error out of an error message.
std::string quote(const std::string& s);

// Shortest text that reads back as the same double; always looks like a float.
std::string fmt_double(double d);

// The candidate nearest to `word` when it is a plausible typo of it, else "".
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace lra::host::manifest_detail
