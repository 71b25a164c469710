// The confined half of a re-evaluation (isolation/mixer_process.h): the
// only place submitted mixer code runs. Started by the verifier as
// `lrahost mixer-server` inside the sandbox, with no file of the run in view:
// it opens the plugin, creates mixers when asked (the verifier's spec,
// options and random-generator state), takes the tensors the verifier sends
// for them and answers forward calls with the output tensor. Whatever it
// prints goes to the maintainer's local log; an error is answered with its
// kind only.
#pragma once

#include <string>

namespace lra::host {

struct MixerServerOptions {
  std::string plugin;  // a plugin file, or FILE.py:CLASS
  std::string device = "cpu";
  int threads = 1;
};

// Serves requests on `fd` until the verifier closes it; returns the exit status.
int serve_mixer(int fd, const MixerServerOptions& o);

}  // namespace lra::host
