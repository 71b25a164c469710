// The three files `lrahost leaderboard` writes, rendered from a Leaderboard.
// Every string that came from a result, a plugin or a bench file is escaped
// for where it lands (HTML text and attributes, Markdown table cells, JSON).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "leaderboard/board.h"

namespace lra::host {

inline constexpr const char* kLeaderboardSchema = "lrahost.leaderboard/v1";

// index.html: one self-contained page (inline CSS, a fixed inline script that
// sorts a table by the clicked column, inline SVG), no external resources.
std::string leaderboard_html(const Leaderboard& board);

// leaderboard.md: GitHub Markdown tables per division, the paper's rows, the invalid results.
std::string leaderboard_markdown(const Leaderboard& board);

// leaderboard.json (schema lrahost.leaderboard/v1, see docs/leaderboard.md).
nlohmann::json leaderboard_json(const Leaderboard& board);

}  // namespace lra::host
