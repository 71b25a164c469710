// common/text.h — small text helpers every part of the host shares: lists
// joined and split, blanks trimmed, text made safe to show (to a person, in
// XML, in a Markdown table). No dependencies beyond the standard library, so
// the lowest libraries (plot/, common/) can use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lra::host::text {

// A size for people, in decimal units: 512 -> "512 B", 33280 -> "33.3 kB",
// 1234567 -> "1.23 MB", 2500000000 -> "2.50 GB" (state sizes, memory).
std::string bytes_text(int64_t bytes);

// {"a", "b"} -> "a, b" (with sep ", ").
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

// Without leading and trailing blanks (space, tab, CR, LF).
std::string_view trim(std::string_view s);

// Up to the first line break (LibTorch appends a backtrace to its messages).
inline std::string first_line(std::string s) {
  if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

// "a,b,,c" -> {"a", "b", "c"}: the non-empty items between `sep`s.
std::vector<std::string> split_list(const std::string& s, char sep = ',');

// The 0-based position of the first item of `s` that is empty or blank
// ("0,,1" -> 1, "0,1," -> 2, "" -> 0), or nullopt: for lists where a
// dropped item is a typo to refuse, not to skip.
std::optional<std::size_t> empty_list_item(std::string_view s, char sep = ',');

// Text from a file made safe to show to a person: characters that are
// invisible or reorder what surrounds them — C0/C1 controls (tab, newline and
// carriage return excepted), bidi embeddings, overrides and isolates
// (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), zero-width and
// other format characters (U+200B-U+200D, U+2060-U+2064, U+FEFF, U+180E,
// U+00AD) — are written as "<U+XXXX>", and each byte of invalid UTF-8 as
// "<0xNN>", so a plugin name cannot pass itself off as another.
std::string visible_text(std::string_view text);

// XML character data: visible_text, then markup escaped (the escapes' "<" and
// ">" included).
std::string xml_escape(std::string_view text);

// How markdown_cell keeps text literal inside a GitHub Markdown table cell.
enum class MarkdownEscape {
  // visible_text, then < > & as entities (no raw HTML reaches GitHub's
  // renderer; quotes stay plain), tab/CR/LF as spaces, and backslash escapes
  // for | \ ` * [ ]. The leaderboard pages and the suite/sweep tables.
  entities,
  // The bytes as they are, CR/LF as spaces, and backslash escapes for
  // \ | ` * [ ] < >. The bench tables.
  backslashes,
};

// Text inside a Markdown table cell: a line break would end the row and '|'
// the cell; the escapes keep the rest from formatting. Underscores stay:
// GitHub does not emphasise inside words, so linear_transformer reads as it is.
std::string markdown_cell(std::string_view text, MarkdownEscape how = MarkdownEscape::entities);

// "42 s", "3 min 12 s", "7 h 05 min", "2.4 days"; "-" for a negative or non-finite value.
std::string human_duration(double seconds);

// A measured difference or tolerance in a message: three significant digits
// ("0.0734", "1.2e-05"), as printf's %.3g writes it.
std::string short_number(double v);

// Progress before item `done` + 1 of `total`, `elapsed` seconds in:
// "[3/12, 1 min 20 s so far, about 4 min 0 s left]" (no estimate before the first is done).
std::string progress_note(std::size_t done, std::size_t total, double elapsed);

}  // namespace lra::host::text
