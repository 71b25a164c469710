#include "cli/command_options.h"

#include "manifest/presets.h"

namespace lra::host {

const CLI::Validator& seed_validator() {
  static const CLI::Validator seed(
      [](std::string& s) -> std::string {
        const bool digits = !s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos;
        if (digits && (s.size() < 19 || s <= "9223372036854775807")) return {};
        return "a seed is an integer in 0..9223372036854775807 (2^63-1), got '" + s + "'";
      },
      "SEED", "seed");
  return seed;
}

void add_device_option(CLI::App* command, std::string& device) {
  command->add_option("--device", device, "auto, cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
}

void add_threads_option(CLI::App* command, int& threads, const std::string& help) {
  command->add_option("--threads", threads, help);
}

void add_fp32_flag(CLI::App* command, bool& fp32, const std::string& help) { command->add_flag("--fp32", fp32, help); }

void add_preset_option(CLI::App* command, std::string& preset, const std::string& help) {
  command->add_option("--preset", preset, help)->check(CLI::IsMember({"official", "smoke"}));
}

void add_protocol_option(CLI::App* command, std::string& protocol) {
  command->add_option("--protocol", protocol,
                      "scratch (default: LRA from scratch) or spt (self-pretraining on the task's own training inputs "
                      "first, then fine-tuning; its own manifests and division, docs/rules.md)")
      ->check(CLI::IsMember(protocol_names()));
}

}  // namespace lra::host
