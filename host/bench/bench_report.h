// bench/bench_report.h — the reports of `lrahost bench`, one header per format
// as google/benchmark splits its reporters: the results part of bench.json and
// reading it back (report_json.h), Markdown tables after the LRA paper's
// Table 2 (report_markdown.h), and SVG charts (report_svg.h; speed and memory
// against length, the paper's Figure 3 when accuracies are given).
#pragma once

#include "bench/report_json.h"
#include "bench/report_markdown.h"
#include "bench/report_svg.h"
