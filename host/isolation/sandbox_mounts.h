// What the sandbox's command sees (isolation/sandbox.h): bubblewrap's
// arguments (the file system, namespaces, user nobody), the user namespace a
// root verifier makes for nobody, and the fixed environment. Internal to the
// sandbox library; sandbox.cpp starts and watches the process.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "isolation/sandbox.h"

namespace lra::host::sandbox_detail {

inline constexpr int kNobody = 65534;

// /usr/bin/bwrap (or /bin, /usr/local/bin); "" when not installed.
std::string find_bwrap();

// A user namespace in which uid/gid 65534 is the host's nobody, made while the
// verifier is root. Returns an O_CLOEXEC descriptor, or -1 with `why` set.
int nobody_user_namespace(std::string& why);

// bwrap and its options up to "--": the command's view of the machine.
// `userns_fd` (-1: none) and `info_fd` are the numbers the command's parent
// holds them at.
std::vector<std::string> bwrap_prefix(const std::string& bwrap, const std::vector<std::string>& argv,
                                      const std::filesystem::path& scratch, const SandboxLimits& limits,
                                      const SandboxMounts& mounts, int userns_fd, int info_fd);

// The environment of the command, confined or not: the fixed variables only.
std::map<std::string, std::string> sandbox_environment(const std::filesystem::path& scratch,
                                                       const SandboxLimits& limits);
// The same as NAME=VALUE strings, for execve.
std::vector<std::string> clean_environment(const std::filesystem::path& scratch, const SandboxLimits& limits);

}  // namespace lra::host::sandbox_detail
