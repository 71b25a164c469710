#include "common/json_file.h"

#include <fstream>
#include <sstream>

#include "common/json_input.h"

namespace lra::host {

nlohmann::json read_json_file(const std::filesystem::path& file, ErrorKind kind, const std::string& what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(kind, file.string() + ": cannot read this " + what);
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return parse_json_input(text.str());
  } catch (const JsonInputError& e) {
    throw Error(kind, file.string() + ": not valid JSON (" + e.what() + "); is it a " + what + "?");
  }
}

}  // namespace lra::host
