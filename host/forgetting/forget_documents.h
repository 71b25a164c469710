// forgetting/forget_documents.h — the pieces of `lrahost forget` that both
// measurements share (forgetting/forget_run.h): the manifest's [data]
// settings and their command-line overrides, forgetting.json's corpus,
// configuration and host objects, progress lines, the output directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "forgetting/corpus.h"
#include "forgetting/forget_run.h"

namespace lra::host::forgetting {

MeasureSettings measure_settings(const Manifest& m);
// The settings with ForgetArgs' overrides; bad values fail before any work.
MeasureConfig measure_config(const ForgetArgs& a, const MeasureSettings& s, int64_t bos, int64_t eos);

std::vector<int32_t> bytes_to_ids(const std::vector<uint8_t>& bytes);

nlohmann::json corpus_json(const Corpus& c);
// The plugin LM's corpus: how its text became tokens.
nlohmann::json trained_corpus_json(const Corpus& c, int64_t train_tokens, int64_t held_out_tokens);
nlohmann::json config_json(const MeasureConfig& c, int64_t train_length, const std::string& precision);
nlohmann::json host_json();

void log_point(spdlog::logger& log, const CurvePoint& p, size_t i, size_t n);

// --out, refused when it already holds a forgetting.json.
std::filesystem::path prepare_out(const std::string& out);
// forgetting.json (doc with the curve's summary) and forgetting.svg, both or neither.
void write_forgetting(const std::filesystem::path& out, const Curve& curve, nlohmann::json doc, bool log_x);

}  // namespace lra::host::forgetting
