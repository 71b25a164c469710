// cli/command_options.h — how commands join the command line: each cmd_*.cpp
// declares its subcommand and options (add_*_command) and leaves the call to
// run in a CommandSlot; the options several commands share are declared by
// the helpers below, once, so they read and check the same everywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace lra::host {

// What the parsed command line asks for: the chosen command's call, bound to
// its parsed arguments, and the command line itself (recorded in results).
struct CommandSlot {
  std::function<int()> action;
  std::vector<std::string> command_line;
};

// Binds `command`'s parsed arguments to `slot` once parsing succeeded.
template <class Args, class Fn>
void on_parsed(CLI::App* command, CommandSlot& slot, std::shared_ptr<Args> args, Fn fn) {
  command->callback([&slot, args, fn] { slot.action = [args, fn] { return fn(*args); }; });
}

// Seeds are 0..2^63-1 wherever they are read: "-7" or "99999999999999999999"
// is a usage error, never wrapped or clamped (parse_seed_list does the same
// for --seeds lists).
const CLI::Validator& seed_validator();

// What --plugin names, in every command's help: a mixer in C++ or in Python.
inline constexpr const char* kMixerPluginHelp =
    "Mixer plugin: a built-in NAME, the PATH of a C++ plugin (.so), or a Python class FILE.py:CLASS";

// --device: auto, cpu or cuda.
void add_device_option(CLI::App* command, std::string& device);
// --threads: CPU threads, 0 = all cores.
void add_threads_option(CLI::App* command, int& threads, const std::string& help = "CPU threads (0 = all cores)");
// --fp32: no bfloat16 autocast on CUDA.
void add_fp32_flag(CLI::App* command, bool& fp32,
                   const std::string& help = "On CUDA, float32 instead of bfloat16 autocast");
// --preset: official or smoke.
void add_preset_option(CLI::App* command, std::string& preset, const std::string& help);
// --protocol scratch|spt (run, suite, bench --task).
void add_protocol_option(CLI::App* command, std::string& protocol);
// --seed, checked by seed_validator().
template <class T>
void add_seed_option(CLI::App* command, T& seed, const std::string& help) {
  command->add_option("--seed", seed, help)->check(seed_validator());
}

}  // namespace lra::host
