// What the JSON and SARIF renderers write alike: facts, fix options, the
// summary. Private to the renderers; the generic writer is json_writer.h.
#pragma once

#include <vector>

#include "bpulint/base/json_writer.h"

namespace bpulint {

struct Diagnostic;
struct ModelReport;
struct NodeFixPlan;
class Value;
struct TraceEntry;

// A fact value: ints, floats, strings, bools, lists, records (keys sorted);
// unknown -> null.
void write_fact_value(JsonWriter& w, const Value& v);
// {"kernel_shape[0]": 5, ...} in trace order.
void write_facts(JsonWriter& w, const std::vector<TraceEntry>& trace);
// [{"id", "title", "safety", "recommended", "applicable", "why_not"?, costs..., "new_violations"}];
// [] when plan is null.
void write_fix_options(JsonWriter& w, const NodeFixPlan* plan);
// {"nodes", "bpu_nodes", ..., "baselined"} from ModelReport::summary (whose
// errors/warnings/notes count the diagnostics neither waived nor baselined).
void write_summary(JsonWriter& w, const ModelReport& report);

}  // namespace bpulint
