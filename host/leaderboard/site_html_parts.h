// Pieces of index.html shared by its writers (site_html.cpp: LRA's
// divisions; site_html_suites.cpp: the other suites' sections). Internal to
// lra_host_leaderboard.
#pragma once

#include <string>
#include <string_view>

#include "leaderboard/board.h"
#include "plot/svg_text.h"

namespace lra::host::site_html {

// HTML text and (quoted) attribute values alike: & < > " ' become entities;
// control characters and invalid UTF-8 become U+FFFD. Everything from a
// result, a plugin or a bench file goes through here.
inline std::string h(std::string_view text) { return svg::xml_escape(text); }

// Sort keys live in data-sort attributes; the page's script reads them and
// nothing else, so no data ever sits inside a <script>.
inline std::string sort_key(double v) { return svg::fixed(v, 6); }

// A header cell: numbers sort best (largest) first, text and ranks ascending.
inline std::string th(const std::string& label, const char* type, const char* first, const char* extra = "") {
  return std::string("<th scope=\"col\" tabindex=\"0\" data-type=\"") + type + "\" data-first=\"" + first + "\"" +
         (std::string(type) == "text" ? " class=\"text\"" : "") + extra + ">" + h(label) + "</th>";
}

// The model cell of an entry's row: name, baseline badge, reference-settings
// marker, version · sha256 · options · how it was made, notes, checks.
std::string model_cell(const ScoreEntry& e, bool baseline);

// The sections of the suites other than LRA (Leaderboard::suites), those with results.
void suite_sections(std::string& s, const Leaderboard& board);

}  // namespace lra::host::site_html
