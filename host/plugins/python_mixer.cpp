#include "plugins/python_mixer.h"

#include <dlfcn.h>

#include <cctype>

#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "common/plugin_identity.h"
#include "common/python_sources.h"
#include "plugins/python_bridge.h"

namespace lra::host {
namespace {

struct Split {
  std::string file, cls;
};

bool ends_with_py(const std::string& s) { return s.size() > 3 && s.compare(s.size() - 3, 3, ".py") == 0; }

// FILE.py:CLASS as written (either part may still be malformed), or nullopt
// when `spec` does not name a Python file at all.
std::optional<Split> split_spec(const std::string& spec) {
  if (ends_with_py(spec)) return Split{spec, ""};  // FILE.py without a class
  const auto colon = spec.rfind(':');
  if (colon == std::string::npos || !ends_with_py(spec.substr(0, colon))) return std::nullopt;
  return Split{spec.substr(0, colon), spec.substr(colon + 1)};
}

// A Python identifier in ASCII: what getattr(module, CLASS) can find, and a
// valid plugin name once it is 1..63 bytes.
bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (const char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// The built-in Python plugin's class opener, loaded (and checked) once.
PythonMixerOpenFn python_opener() {
  const auto file = builtin_plugin_dir() / "lra_mixer_python.so";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw Error(ErrorKind::plugin, "this lrahost has no Python plugin (" + file.string() +
                                       " is missing): it is built when python3-dev, pybind11-dev and python3-torch "
                                       "are installed (scripts/bootstrap installs them); rebuild with scripts/build");
  load_plugin(file, LRA_KIND_MIXER);  // the descriptor's checks, then dlopen
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
  void* fn = handle ? dlsym(handle, kPythonMixerOpenSymbol) : nullptr;
  if (!fn)
    throw Error(ErrorKind::plugin, file.string() + " exports no " + kPythonMixerOpenSymbol +
                                       "(): it is not this lrahost's Python plugin; rebuild with scripts/build");
  return reinterpret_cast<PythonMixerOpenFn>(fn);
}

}  // namespace

bool is_python_mixer_spec(const std::string& spec) { return split_spec(spec).has_value(); }

const LoadedPlugin& load_python_mixer(const std::string& spec) {
  const auto parts = split_spec(spec);
  if (!parts) throw Error(ErrorKind::usage, "'" + spec + "' is not FILE.py:CLASS");
  if (parts->cls.empty())
    throw Error(ErrorKind::usage, "--plugin " + spec + " names a Python file but no class: name the mixer's class "
                                      "as FILE.py:CLASS (e.g. " + parts->file + ":MyAttention)");
  if (auto problem = plugin_name_problem(parts->cls))
    throw Error(ErrorKind::usage, "--plugin " + spec + ": the class name becomes the plugin's name, and the " +
                                      *problem);
  if (!is_identifier(parts->cls))
    throw Error(ErrorKind::usage, "--plugin " + spec + ": '" + parts->cls + "' is not a Python class name (ASCII "
                                      "letters, digits and _, not starting with a digit; a nested class cannot "
                                      "be named: bind it to a module-level name)");
  std::error_code ec;
  const auto file = std::filesystem::canonical(parts->file, ec);
  if (ec || !std::filesystem::is_regular_file(file, ec))
    throw Error(ErrorKind::usage, "--plugin " + spec + ": " + parts->file + " is not a readable file" +
                                      (ec ? " (" + ec.message() + ")" : ""));
  const std::string key = file.string() + ":" + parts->cls;

  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::unique_ptr<LoadedPlugin>>;  // never freed, like libraries
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache->find(key); it != cache->end()) return *it->second;

  static const PythonMixerOpenFn open = python_opener();
  const LoadedPlugin& bridge = load_plugin(builtin_plugin_dir() / "lra_mixer_python.so", LRA_KIND_MIXER);
  PythonMixerClass cls;
  const Status st = open(file.c_str(), parts->cls.c_str(), &cls);
  if (!st.ok()) throw Error(st.kind, st.message);

  auto loaded = std::make_unique<LoadedPlugin>();
  loaded->descriptor = bridge.descriptor;
  loaded->descriptor.file = key;
  loaded->descriptor.name = cls.class_name;
  loaded->descriptor.capabilities = cls.capabilities;
  loaded->source = nlohmann::json::parse(cls.identity_json);
  loaded->sha256 = python_sources_sha256(loaded->source.at("files"));
  loaded->descriptor.version = "py-" + loaded->sha256.substr(0, 12);
  loaded->descriptor.description = "Python mixer " + parts->cls + " from " + file.filename().string();
  if (loaded->descriptor.description.size() > kMaxPluginDescriptionBytes)
    loaded->descriptor.description.resize(kMaxPluginDescriptionBytes);
  loaded->interface = cls.plugin;
  auto& ref = *loaded;
  (*cache)[key] = std::move(loaded);
  return ref;
}

}  // namespace lra::host
