// --format json: one versioned object, fixed key order (see render_machine.h
// and README "Machine-readable output"). Also the helpers the SARIF and
// GitHub renderers share (render_json_shared.h).
#include <algorithm>
#include <cmath>

#include "bpulint/render/finding_groups.h"
#include "bpulint/render/render_machine.h"
#include "render_json_shared.h"

namespace bpulint {


void write_fact_value(JsonWriter& w, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Unknown: w.null(); return;
    case Value::Kind::Bool: w.value(v.as_bool()); return;
    case Value::Kind::Int: w.value(static_cast<long long>(v.as_int())); return;
    case Value::Kind::Float: w.value(v.as_number()); return;
    case Value::Kind::String: w.value(v.as_string()); return;
    case Value::Kind::List:
      w.begin_array();
      for (const auto& item : v.items()) write_fact_value(w, item);
      w.end_array();
      return;
    case Value::Kind::Record:
      w.begin_object();
      for (const auto& kv : v.fields()) {
        w.key(kv.first);
        write_fact_value(w, kv.second);
      }
      w.end_object();
      return;
  }
  w.null();
}

void write_facts(JsonWriter& w, const Trace& trace) {
  w.begin_object();
  for (const auto& t : trace) {
    w.key(t.text);
    write_fact_value(w, t.value);
  }
  w.end_object();
}

namespace {

void cost_member(JsonWriter& w, const char* key, int64_t v) {
  w.key(key);
  if (v < 0) w.null();
  else w.value(static_cast<long long>(v));
}

}  // namespace

void write_fix_options(JsonWriter& w, const NodeFixPlan* plan) {
  w.begin_array();
  if (plan != nullptr) {
    for (const auto& o : plan->options) {
      w.begin_object();
      w.member("id", o.id).member("title", o.title).member("safety", applicability_name(o.applicability));
      w.member("recommended", o.recommended).member("applicable", o.applicable);
      if (!o.applicable) w.member("why_not", o.why_not);
      cost_member(w, "intermediate_channels", o.cost.intermediate_channels);
      cost_member(w, "intermediate_elements", o.cost.intermediate_elements);
      cost_member(w, "intermediate_bytes", o.cost.intermediate_bytes);
      cost_member(w, "macs", o.cost.macs);
      cost_member(w, "moved_elements", o.cost.moved_elements);
      w.member("new_nodes", static_cast<long long>(o.cost.new_nodes));
      w.key("new_violations").begin_array();
      for (const auto& v : o.new_violations) w.value(v);
      w.end_array();
      w.end_object();
    }
  }
  w.end_array();
}

void write_summary(JsonWriter& w, const ModelReport& r) {
  const Summary& s = r.summary;
  w.begin_object();
  w.member("nodes", s.nodes).member("bpu_nodes", s.bpu).member("cpu_nodes", s.cpu);
  w.member("folded_nodes", s.folded).member("unknown_nodes", s.unknown).member("runtime_shape_nodes", s.runtime_shape)
      .member("data_shape_nodes", s.data_shape);
  w.member("no_compile_nodes", s.no_compile);
  w.member("cpu_islands", s.cpu_islands);
  w.member("errors", s.errors).member("warnings", s.warnings).member("notes", s.notes).member("unverified", s.unverified);
  w.member("waived", s.waived).member("baselined", s.baselined);
  w.member("error_nodes", s.error_nodes).member("warning_nodes", s.warning_nodes).member("note_nodes", s.note_nodes);
  w.member("model_errors", s.model_errors).member("model_warnings", s.model_warnings).member("model_notes", s.model_notes);
  w.end_object();
}

namespace {

// Each finding's position in the model's "diagnostics" array, -1 when it is not listed.
std::vector<long> listed_positions(const ModelReport& r, bool show_waived, Severity min_severity) {
  std::vector<long> position(r.diagnostics.size(), -1);
  long next = 0;
  for (size_t i = 0; i < r.diagnostics.size(); ++i) {
    if (listed(r.diagnostics[i], show_waived, min_severity)) position[i] = next++;
  }
  return position;
}

// Findings that say the same thing on several nodes: each group's rule, size and
// positions in the model's "diagnostics" array (every finding stays listed there).
void write_groups(JsonWriter& w, const ModelReport& r, const std::vector<FindingGroup>& groups, bool show_waived,
                  Severity min_severity) {
  const std::vector<long> position = listed_positions(r, show_waived, min_severity);
  w.key("groups").begin_array();
  for (const auto& g : groups) {
    if (g.members.size() < 2) continue;
    w.begin_object().member("rule", r.diagnostics[g.members.front()].rule->id).member("count", g.members.size());
    w.member("same", g.by_rule ? "rule" : "finding");
    w.key("diagnostics").begin_array();
    for (size_t i : g.members) w.value(static_cast<long long>(position[i]));
    w.end_array().end_object();
  }
  w.end_array();
}

// "model_fixes": the whole-model fix kinds offered (only when one is): what
// each would do, and the positions in "diagnostics" of the listed findings it settles.
void write_model_fixes(JsonWriter& w, const ModelReport& r, bool show_waived, Severity min_severity) {
  if (r.model_fix_plans.empty()) return;
  const std::vector<long> position = listed_positions(r, show_waived, min_severity);
  w.key("model_fixes").begin_array();
  for (const ModelFixPlan& p : r.model_fix_plans) {
    const FixKind* kind = find_fix_kind(p.kind);
    w.begin_object().member("id", p.kind).member("title", kind->title);
    w.member("safety", applicability_name(kind->applicability)).member("applicable", p.why_not.empty());
    if (p.why_not.empty()) w.member("summary", p.summary);
    else w.member("why_not", p.why_not);
    w.key("diagnostics").begin_array();
    for (size_t i : p.settles) {
      if (position[i] >= 0) w.value(static_cast<long long>(position[i]));
    }
    w.end_array();
    if (p.target_opset > 0) w.member("target_opset", static_cast<long long>(p.target_opset));
    if (!p.frontier.empty()) {
      w.key("frontier").begin_array();
      for (const auto& t : p.frontier) w.value(t);
      w.end_array();
    }
    w.member("evidence", kind->model->evidence).end_object();
  }
  w.end_array();
}

// "config_fixes": the compile-config fix kinds the finding offers (only on
// such findings): the node_info lines each would add, or why it cannot.
void write_config_fixes(JsonWriter& w, const ModelReport& r, const Diagnostic& d) {
  bool open = false;
  for (const ConfigFixPlan& p : r.config_fix_plans) {
    if (p.rule != d.rule->id || p.node != d.node) continue;
    if (!open) w.key("config_fixes").begin_array();
    open = true;
    const FixKind* kind = find_fix_kind(p.kind);
    w.begin_object().member("id", p.kind).member("title", kind->title);
    w.member("safety", applicability_name(kind->applicability)).member("applicable", p.why_not.empty());
    if (!p.why_not.empty()) w.member("why_not", p.why_not);
    w.key("lines").begin_array();
    for (const ConfigEdit& e : p.edits) w.value(config_edit_text(e));
    w.end_array();
    w.member("evidence", kind->config->evidence).end_object();
  }
  if (open) w.end_array();
}

void write_diagnostics(JsonWriter& w, const ModelReport& r, bool show_waived, Severity min_severity) {
  w.begin_array();
  for (const auto& d : r.diagnostics) {
    if (!listed(d, show_waived, min_severity)) continue;
    const NodeFacts* n = d.node >= 0 ? &r.facts.nodes[static_cast<size_t>(d.node)] : nullptr;
    w.begin_object();
    w.member("rule", d.rule->id).member("name", d.rule->name).member("severity", severity_name(d.severity));
    w.member("outcome", d.outcome == Outcome::Fail ? "fail" : "unknown");
    if (n != nullptr) {
      w.member("node", std::string(n->display_name)).member("graph_path", n->graph_path);
      w.member("node_index", n->index_in_graph).member("op_type", n->op_type);
      w.member("node_id", r.facts.node_key(static_cast<size_t>(d.node)));
    } else {
      w.member_null("node").member_null("graph_path").member_null("node_index").member_null("op_type");
      w.member_null("node_id");
    }
    w.member("message", d.message);
    if (const SourceLine* s = n != nullptr ? r.source_for(d.node) : nullptr) {  // from the exporter's stack trace
      w.key("pytorch_source").begin_object();
      if (s->path.empty()) w.member_null("path");
      else w.member("path", s->path);
      w.member("line", s->line).member("function", s->function).member("code", s->code);
      w.member("trace_file", s->trace_file);
      w.end_object();
    }
    w.key("facts");
    write_facts(w, d.facts);
    w.member("status", status_name(d.rule->status)).member("source", d.rule->source);
    w.key("fixes");
    const NodeFixPlan* plan = n != nullptr && !d.fixes.empty() ? r.plan_for(d.node) : nullptr;
    write_fix_options(w, plan);
    if (plan != nullptr) {  // why --fix leaves the node as it is; null when it applies the recommended fix
      const std::string blocked = plan->fix_blocked();
      if (blocked.empty()) w.member_null("fix_blocked");
      else w.member("fix_blocked", blocked);
    }
    write_config_fixes(w, r, d);
    if (show_waived && !d.waiver.empty()) w.member("waiver", d.waiver);
    if (show_waived && d.baselined) w.member("baselined", true);
    w.end_object();
  }
  w.end_array();
}

void write_notes(JsonWriter& w, const ModelReport& r) {
  w.begin_array();
  for (const auto& note : r.facts.notes) w.value(note);
  for (const auto& fn : r.facts.unanalysed_functions) w.value("model-local function " + fn + " is not analysed");
  w.end_array();
}

// "fixed_config": what --fix wrote to the compile config; with the re-lint
// when no model was written (else "fixed_model" holds it).
void write_fixed_config(JsonWriter& w, const ConfigFixRun& run, const ModelReport* relint, bool show_waived,
                        Severity min_severity) {
  w.begin_object().member("path", run.output_path).member("config", run.config_path).member("written", run.written);
  if (!run.error.empty()) w.member("error", run.error);
  w.key("added").begin_array();
  for (const auto& a : run.added) {
    w.begin_object().member("kind", a.kind).member("rule", a.rule).member("node", a.node).member("line", a.line);
    w.member("evidence", a.evidence).end_object();
  }
  w.end_array();
  if (relint != nullptr && relint->ok) {
    w.key("summary");
    write_summary(w, *relint);
    w.key("diagnostics");
    write_diagnostics(w, *relint, show_waived, min_severity);
  }
  w.end_object();
}

// "applied_model_fixes": what --fix's model fixes did, in order; the last
// one written carries the re-lint (with the fixed config, when one was written).
void write_applied_model_fixes(JsonWriter& w, const std::vector<ModelFixOutcome>& runs, const ModelReport* relint,
                               bool show_waived, Severity min_severity) {
  size_t last_written = 0;  // 1 + the index of the last one written
  for (size_t k = 0; k < runs.size(); ++k) last_written = runs[k].written ? k + 1 : last_written;
  w.key("applied_model_fixes").begin_array();
  for (size_t k = 0; k < runs.size(); ++k) {
    const ModelFixOutcome& run = runs[k];
    w.begin_object().member("kind", run.kind).member("written", run.written);
    if (run.written) w.member("said", run.said);
    else w.member(run.refused ? "not_applied" : "error", run.error);
    w.key("files").begin_array();
    for (const auto& [role, path] : run.files) w.begin_object().member("role", role).member("path", path).end_object();
    w.end_array();
    if (run.written && k + 1 == last_written && relint != nullptr && relint->ok) {
      w.member("relint_path", run.relint);
      w.key("summary");
      write_summary(w, *relint);
      w.key("diagnostics");
      write_diagnostics(w, *relint, show_waived, min_severity);
    }
    w.end_object();
  }
  w.end_array();
}

void write_fixed_model(JsonWriter& w, const ModelReport& r, const FixRun& run, const ModelReport* fixed,
                       bool show_waived, Severity min_severity) {
  w.begin_object();
  w.member("path", run.output_path).member("written", run.written);
  // Where the weights went: null when embedded in the model (or nothing was written).
  if (run.written && !run.data_path.empty()) w.member("data_path", run.data_path);
  else w.member_null("data_path");
  if (!run.error.empty()) w.member("error", run.error);
  w.key("results").begin_array();
  for (const auto& res : run.results) {
    w.begin_object();
    if (res.node >= 0 && static_cast<size_t>(res.node) < r.facts.nodes.size()) {
      w.member("node", std::string(r.facts.nodes[static_cast<size_t>(res.node)].display_name));
    } else {
      w.member_null("node");
    }
    if (res.fix_id.empty()) w.member_null("fix");
    else w.member("fix", res.fix_id);
    w.member("applied", res.applied);
    if (!res.applied) w.member("reason", res.reason);
    w.member("trials", res.trials).member("seed", static_cast<unsigned long long>(res.seed));
    w.key("max_abs_error");
    if (res.max_abs_error < 0 || !std::isfinite(res.max_abs_error)) w.null();
    else w.value(res.max_abs_error);
    w.key("proof_input_shapes").begin_array();
    for (const auto& shape : res.proof_input_shapes) {
      w.begin_array();
      for (int64_t d : shape) w.value(static_cast<long long>(d));
      w.end_array();
    }
    w.end_array();
    w.key("input_shape").begin_array();  // the real input; null for a dynamic dim
    for (int64_t d : res.input_shape) {
      if (d < 0) w.null();
      else w.value(static_cast<long long>(d));
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  if (fixed != nullptr && fixed->ok) {
    w.key("summary");
    write_summary(w, *fixed);
    w.key("diagnostics");
    write_diagnostics(w, *fixed, show_waived, min_severity);
  }
  w.end_object();
}

}  // namespace

std::string render_json(const RunInfo& run) {
  JsonWriter w;
  w.begin_object();
  w.member("version", 1);
  w.key("tool").begin_object().member("name", "bpu-lint").member("version", run.tool_version).end_object();
  w.key("platform").begin_object();
  w.member("name", run.platform != nullptr ? run.platform->name : std::string());
  w.member("march", run.platform != nullptr ? run.platform->march : std::string());
  w.end_object();
  // Every platform of the run, in the order the models name them (overrides may mix them).
  std::vector<const Platform*> platforms;
  for (const auto& m : run.models) {
    const Platform* p = m.platform != nullptr ? m.platform : run.platform;
    if (p != nullptr && std::find(platforms.begin(), platforms.end(), p) == platforms.end()) platforms.push_back(p);
  }
  if (platforms.empty() && run.platform != nullptr) platforms.push_back(run.platform);
  w.key("platforms").begin_array();
  for (const Platform* p : platforms) w.begin_object().member("name", p->name).member("march", p->march).end_object();
  w.end_array();
  // The same folding as SARIF's results and GitHub's annotations (finding_groups.h).
  std::vector<const ModelReport*> reports;
  for (const auto& m : run.models) reports.push_back(m.report);
  const auto groups = group_findings(reports, run.show_waived, run.min_severity);
  w.key("models").begin_array();
  for (size_t k = 0; k < run.models.size(); ++k) {
    const auto& m = run.models[k];
    w.begin_object();
    w.member("path", m.path);
    const Platform* platform = m.platform != nullptr ? m.platform : run.platform;
    w.member("platform", platform != nullptr ? platform->name : std::string());
    const ModelReport* r = m.report;
    if (r == nullptr || !r->ok) {
      // Unreadable: the same keys, empty, so consumers need no special case.
      w.member("error", !m.error.empty() || r == nullptr ? m.error : r->error);
      w.member_null("summary");
      w.key("notes").begin_array().end_array();
      w.key("diagnostics").begin_array().end_array();
      w.key("groups").begin_array().end_array();
      w.end_object();
      continue;
    }
    w.key("summary");
    write_summary(w, *r);
    w.key("notes");
    write_notes(w, *r);
    w.key("diagnostics");
    write_diagnostics(w, *r, run.show_waived, run.min_severity);
    write_groups(w, *r, groups[k], run.show_waived, run.min_severity);
    write_model_fixes(w, *r, run.show_waived, run.min_severity);
    // The re-lint (of every file --fix wrote) is given once: with the model
    // fixes when they ran, else the layer rewrites, else the config.
    const bool model_fixes_ran = m.model_fix_runs != nullptr && !m.model_fix_runs->empty();
    const bool model_fixes_wrote =
        model_fixes_ran && std::any_of(m.model_fix_runs->begin(), m.model_fix_runs->end(),
                                       [](const ModelFixOutcome& o) { return o.written; });
    if (m.fix_run != nullptr) {
      w.key("fixed_model");
      write_fixed_model(w, *r, *m.fix_run, model_fixes_wrote ? nullptr : m.fixed, run.show_waived, run.min_severity);
    }
    if (model_fixes_ran) write_applied_model_fixes(w, *m.model_fix_runs, m.fixed, run.show_waived, run.min_severity);
    if (m.config_fix_run != nullptr) {
      w.key("fixed_config");
      write_fixed_config(w, *m.config_fix_run, m.fix_run == nullptr && !model_fixes_wrote ? m.fixed : nullptr,
                         run.show_waived, run.min_severity);
    }
    w.end_object();
  }
  w.end_array();
  w.member("exit_code", run.exit_code);
  if (run.with_statistics) {
    w.key("statistics").begin_array();
    for (const RuleCount& c : run.statistics) {
      w.begin_object().member("rule", c.rule->id).member("name", c.rule->name);
      w.member("severity", severity_name(c.severity)).member("outcome", c.outcome == Outcome::Fail ? "fail" : "unknown");
      w.member("count", c.count).end_object();
    }
    w.end_array();
  }
  if (run.hb_config != nullptr) {
    w.key("hb_config").begin_object().member("path", run.hb_config->path).member("march", run.hb_config->march);
    w.key("input_shapes").begin_object();
    for (const auto& [name, dims] : run.hb_config->input_shapes) {
      w.key(name).begin_array();
      for (int64_t d : dims) w.value(static_cast<long long>(d));
      w.end_array();
    }
    w.end_object().end_object();
  }
  w.end_object();
  return w.str() + "\n";
}

}  // namespace bpulint
