# The fix catalog: every fix kind bpu-lint knows, one line each, in rank order
# (a kind marked `fallback` ranks after the kinds above it that apply). --fix
# applies the model kinds (opset-down, host-split) in this order, after the
# layer rewrites, each on the model the step before wrote.
#
# A kind is the folder src/fix/kinds/<id>/ (its sources are built into the fix
# stage) whose code defines `const FixKind fix_kind_<id, '-' as '_'>`, the
# kind's whole behaviour (fix_catalog.h). Adding a kind: its folder and its
# line here. CMake makes from this list the ids the rule loader accepts under
# `fixes:` (bpulint/rules/fix_ids.h) and the catalog's table.
set(BPULINT_FIX_KINDS
  convtranspose2d
  conv3d-1x1x1
  convtranspose2d-d-taps
  node-info-bpu-int8
  node-info-bpu-int16
  node-info-float-to-int16
  opset-down
  host-split
)
