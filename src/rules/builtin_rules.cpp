#include "bpulint/rules/builtin_rules.h"

namespace bpulint {
namespace {

Rule make(const char* id, const char* name, Severity severity, Effect effect, const char* summary,
          const char* description) {
  Rule r;
  r.id = id;
  r.name = name;
  r.severity = severity;
  r.effect = effect;
  r.summary = summary;
  r.description = description;
  r.source = "bpu-lint engine";
  r.status = Status::Verified;
  r.ops = {"*"};
  r.builtin = true;
  r.defined_at = {"src/rules/builtin_rules.cpp", 0, 0};
  return r;
}

}  // namespace

const std::vector<Rule>& builtin_rules() {
  static const std::vector<Rule> rules = {
      make(builtin::kOpNotInDatabase, "op-not-in-database", Severity::Note, Effect::Advice,
           "The op is not classified for this platform, so its placement cannot be verified.",
           "The rule database lists which ops the platform's BPU runs, which the toolchain folds away and which "
           "always run on the CPU. An op in none of these lists (including custom-domain ops and calls to "
           "model-local functions) is reported as unknown rather than assumed to be supported. Add it to the "
           "platform's `ops:` classes once its placement is known."),
      make(builtin::kOpRunsOnCpu, "op-runs-on-cpu", Severity::Error, Effect::CpuFallback,
           "The platform has no BPU implementation of this op; the toolchain runs it on the CPU.",
           "The op is classified `cpu` for this platform: whatever its attributes, the toolchain places it on "
           "the CPU (an `hbtl.call` node in the compiled model), which costs a BPU<->CPU round trip."),
      make(builtin::kModelNote, "model-not-fully-analysed", Severity::Note, Effect::Advice,
           "Part of the model could not be analysed (newer opset, failed shape inference, model-local functions).",
           "bpu-lint keeps linting when the ONNX library cannot infer shapes or knows an op only in a newer "
           "opset, but every fact that depends on that analysis becomes unknown. This note says what was not "
           "analysed so that a clean result is not mistaken for a verified one."),
      make(builtin::kUnverifiedRoot, "unverified-downstream", Severity::Note, Effect::Advice,
           "Rule checks downstream of this point cannot be verified: a fact they need is unknown from here on.",
           "When a shape or value is unknown, every rule that reads it downstream ends in \"cannot verify\". "
           "Rather than one note per check, bpu-lint reports the place where the knowledge stops (a graph input "
           "with a dynamic dim that was not pinned, a node whose shape inference failed, an op ONNX cannot "
           "infer, an output shape that depends on runtime values) once, with the number of checks it blocks "
           "and how to resolve it. `--show-unverified` lists the individual checks as well; the JSON summary "
           "counts them as `unverified`."),
      make(builtin::kSiblingLimit, "limit-known-for-sibling-chip", Severity::Note, Effect::Advice,
           "The op's limit is published for a sibling chip only; on this chip it cannot be verified.",
           "Chips of one family (the Nash marches J6P, J6E, J6M share hbdk4) often have a limit published for "
           "one of them only: J6P's 3-D ConvTranspose range comes from a J6P case study. On a sibling without "
           "that limit, a node it applies to is neither passed nor failed: it is reported as \"cannot verify\", "
           "with the sibling's limit and whether the node would meet it there. A rule of your own with the same "
           "id (or `ref`) replaces the hint."),
      make(builtin::kConfigPlacement, "compile-config-placement", Severity::Note, Effect::Advice,
           "The compile config (--hb-config) places nodes itself: on the CPU by choice, or names nodes the model lacks.",
           "hb_mapper and hb_compile configs put nodes on the CPU on purpose (model_parameters.node_info with "
           "`ON: CPU`, or run_on_cpu; node_info wins) and the compiler lists them as CPU nodes. bpu-lint places "
           "them on the CPU too and reports them once per model, as a choice, not a violation: their own findings "
           "are set aside with the config as the reason (--show-waived lists them). A node the config puts on the "
           "BPU (`ON: BPU`, run_on_bpu) settles the findings of rules marked `resolved_by: config_on_bpu` (X5's "
           "Softmax, BPU3401). Names the config gives that the model does not have are listed too: a typo there "
           "silently changes nothing in the compiler."),
  };
  return rules;
}

const Rule& builtin_rule(const char* id) {
  for (const auto& r : builtin_rules()) {
    if (r.id == id) return r;
  }
  static const Rule none;
  return none;
}

}  // namespace bpulint
