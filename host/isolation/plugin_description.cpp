#include "isolation/plugin_description.h"

#include "isolation/mixer_limits.h"
#include "isolation/mixer_wire.h"

namespace lra::host {

void write_description(wire::Writer& w, const PluginDescription& d) {
  w.str(d.name);
  w.str(d.version);
  w.str(d.description);
  w.u32(d.capabilities);
  w.u32(d.abi_major);
  w.u32(d.abi_minor);
  w.u32(static_cast<uint32_t>(d.options.size()));
  for (const auto& o : d.options) {
    w.str(o.name);
    w.str(o.help);
    w.u8(static_cast<uint8_t>(o.default_value.index()));
    switch (o.default_value.index()) {
      case 0: w.u8(std::get<bool>(o.default_value) ? 1 : 0); break;
      case 1: w.i64(std::get<int64_t>(o.default_value)); break;
      case 2: w.f64(std::get<double>(o.default_value)); break;
      default: w.str(std::get<std::string>(o.default_value)); break;
    }
  }
  w.str(d.sha256);
  w.str(d.source_json);
}

PluginDescription read_description(wire::Reader& r) {
  PluginDescription d;
  d.name = r.str(kMaxNameBytes);
  d.version = r.str(kMaxNameBytes);
  d.description = r.str(kMaxTextBytes);
  d.capabilities = r.u32();
  d.abi_major = r.u32();
  d.abi_minor = r.u32();
  const uint32_t n = r.u32();
  if (n > kMaxPluginOptions) throw Error(ErrorKind::plugin, "the mixer process described more than " +
                                                                std::to_string(kMaxPluginOptions) + " options");
  for (uint32_t i = 0; i < n; ++i) {
    lra::OptionSpec o;
    o.name = r.str(kMaxNameBytes);
    o.help = r.str(kMaxTextBytes);
    switch (r.u8()) {
      case 0: o.default_value = r.u8() != 0; break;
      case 1: o.default_value = r.i64(); break;
      case 2: o.default_value = r.f64(); break;
      case 3: o.default_value = r.str(kMaxTextBytes); break;
      default: throw Error(ErrorKind::plugin, "the mixer process described an option of no known type");
    }
    d.options.push_back(std::move(o));
  }
  d.sha256 = r.str(kMaxNameBytes);
  d.source_json = r.str(kMaxSourceJsonBytes);
  return d;
}

}  // namespace lra::host
