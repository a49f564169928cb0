#!/usr/bin/python3
"""Structural checks of a model written by `bpu-lint --fix` against the model it came from.

Usage: check_fixed.py ORIG.onnx FIXED.onnx EXPECTED_REWRITTEN [--strategy S]

Checks, on FIXED:
  - onnx.checker.check_model(full_check=True) and strict shape inference pass;
  - (3-D ConvTranspose nodes in ORIG) - (3-D ConvTranspose nodes in FIXED) == EXPECTED_REWRITTEN;
  - no dead initializers: each initializer is consumed by a node (in any subgraph) or is a graph
    output; initializer names are unique;
  - every ORIG node other than a rewritten 3-D ConvTranspose is still there, unchanged (named nodes
    by name + op_type and the whole NodeProto; unnamed ones as a multiset per op_type); the
    ORIG initializers that remain are bit-identical;
  - graph inputs and outputs unchanged (names, order, types); ir_version, opset_import and
    metadata_props unchanged;
  - the naming contract for everything new: nodes `<node>_fix_<step>`, values
    `<node>_fix_<step>_out`, initializers `<weight>_fix_<fix-id>`, `<bias>_fix_<fix-id>`,
    `<node>_fix_shape_<step>`, `<node>_fix_taps` (the D-tap matrix), where `<node>` is the
    rewritten node's name or `<OpType>_<index>` when unnamed; no new name equals any name of
    ORIG; a suffix `_k` (k >= 2) is used only when the base name and every `_2`..`_{k-1}` are taken;
  - with --strategy: new ops are only Transpose/Reshape plus, per rewritten node, one 2-D
    ConvTranspose (convtranspose2d), one 1x1x1 stride-1 Conv (conv3d-1x1x1), or one 2-D
    ConvTranspose without bias, one MatMul by a constant 0/1 matrix with one 1 at most per row,
    and one Add when the layer has a bias (convtranspose2d-d-taps).
Prints each problem on its own line prefixed `problem: ` and a final `check_fixed: ok|N problems`.
Exit 0 ok, 1 problems, 2 usage error or unreadable model.
"""
import collections
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

STEPS = ("transpose_in", "reshape_in", "convtranspose2d", "conv1x1x1", "reshape_mid", "transpose_mid",
         "reshape_out", "transpose_out", "reshape_taps", "matmul_taps", "add_bias", "quantize_weight",
         "dequantize_weight")
STEP_RE = "|".join(STEPS)
NEW_OPS = {"Transpose", "Reshape", "ConvTranspose", "Conv", "MatMul", "Add", "QuantizeLinear", "DequantizeLinear"}
QDQ = ("QuantizeLinear", "DequantizeLinear")


def weight_chain(graph, node):
    """A ConvTranspose's quantised weight: its DequantizeLinear (and the QuantizeLinear under it),
    the nodes a rewrite replaces with its own, then the nodes that computed their scale and zero
    point for them alone (torch's Identity alias of a shared zero point, Abs -> ReduceMax -> Div
    -> Clip of the weight and its Constants), which go with them; [] for a float weight."""
    made_by = {o: n for n in graph.node for o in n.output}
    chain = []
    name = node.input[1] if len(node.input) > 1 else ""
    while name in made_by and made_by[name].op_type in QDQ and len(chain) < 2:
        chain.append(made_by[name])
        name = made_by[name].input[0]
    readers = collections.defaultdict(list)
    for n in graph.node:
        for i in n.input:
            if i:
                readers[i].append(n)
    outputs = {v.name for v in graph.output}
    gone = {id(n) for n in chain}
    pending = [i for n in chain for i in n.input if i]
    while pending:
        producer = made_by.get(pending.pop())
        if producer is None or id(producer) in gone or producer.domain not in ("", "ai.onnx"):
            continue
        if any(o in outputs or any(id(r) not in gone for r in readers[o]) for o in producer.output if o):
            continue
        gone.add(id(producer))
        chain.append(producer)
        pending.extend(i for i in producer.input if i)
    return chain
STRATEGIES = ("convtranspose2d", "conv3d-1x1x1", "convtranspose2d-d-taps")


def subgraphs(node):
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            yield from attr.graphs


def walk_graphs(graph):
    yield graph
    for node in graph.node:
        for sg in subgraphs(node):
            yield from walk_graphs(sg)


def all_names(model):
    """Every name in the model, in any namespace and any (sub)graph."""
    names = set()
    for g in walk_graphs(model.graph):
        for n in g.node:
            if n.name:
                names.add(n.name)
            names.update(i for i in n.input if i)
            names.update(o for o in n.output if o)
        for coll in (g.input, g.output, g.value_info):
            names.update(v.name for v in coll)
        names.update(t.name for t in g.initializer)
        names.update(t.values.name for t in g.sparse_initializer)
    return names


def rank_table(model):
    """name -> rank, from initializers and strict-mode-free shape inference (best effort)."""
    ranks = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # pylint: disable=broad-except
        inferred = model
    for g in walk_graphs(inferred.graph):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            t = vi.type.tensor_type
            if t.HasField("shape"):
                ranks[vi.name] = len(t.shape.dim)
        for t in g.initializer:
            ranks[t.name] = len(t.dims)
    return ranks


def is_ct3d(node, ranks):
    if node.op_type != "ConvTranspose" or node.domain not in ("", "ai.onnx"):
        return False
    if len(node.input) > 1 and node.input[1] in ranks:
        return ranks[node.input[1]] == 5
    for a in node.attribute:
        if a.name == "kernel_shape":
            return len(a.ints) == 3
    return ranks.get(node.input[0]) == 5


def count_ct3d(model, ranks):
    return sum(1 for g in walk_graphs(model.graph) for n in g.node if is_ct3d(n, ranks))


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


class Checker:
    def __init__(self, orig, fixed, expected, strategy):
        self.orig = orig
        self.fixed = fixed
        self.expected = expected
        self.strategy = strategy
        self.problems = []

    def problem(self, msg):
        self.problems.append(msg)

    def run(self):
        fixed = self.fixed
        try:
            onnx.checker.check_model(fixed, full_check=True)
        except Exception as e:  # pylint: disable=broad-except
            self.problem("onnx checker (full_check) fails: %s" % str(e).strip().splitlines()[0])
        try:
            onnx.shape_inference.infer_shapes(fixed, check_type=True, strict_mode=True)
        except Exception as e:  # pylint: disable=broad-except
            self.problem("strict shape inference fails: %s" % str(e).strip().splitlines()[0])
        self.check_header()
        self.check_io()
        orig_ranks = rank_table(self.orig)
        fixed_ranks = rank_table(fixed)
        total = count_ct3d(self.orig, orig_ranks)
        remaining = count_ct3d(fixed, fixed_ranks)
        if total - remaining != self.expected:
            self.problem("3-D ConvTranspose nodes: %d before, %d after: %d rewritten, expected %d"
                         % (total, remaining, total - remaining, self.expected))
        self.check_initializers()
        rewritten = self.check_nodes(orig_ranks)
        self.check_new_names(rewritten, fixed_ranks)
        return self.problems

    def check_header(self):
        o, f = self.orig, self.fixed
        if o.ir_version != f.ir_version:
            self.problem("ir_version changed: %d -> %d" % (o.ir_version, f.ir_version))
        ops = lambda m: [(x.domain, x.version) for x in m.opset_import]
        if ops(o) != ops(f):
            self.problem("opset_import changed: %s -> %s" % (ops(o), ops(f)))
        props = lambda m: [(p.key, p.value) for p in m.metadata_props]
        if props(o) != props(f):
            self.problem("metadata_props changed: %s -> %s" % (props(o), props(f)))

    def check_io(self):
        o, f = self.orig.graph, self.fixed.graph
        for kind, a, b in (("input", o.input, f.input), ("output", o.output, f.output)):
            na, nb = [v.name for v in a], [v.name for v in b]
            if na != nb:
                self.problem("graph %ss changed: %s -> %s" % (kind, na, nb))
                continue
            for va, vb in zip(a, b):
                if va.type != vb.type:
                    self.problem("graph %s '%s' changed type: %s -> %s" % (
                        kind, va.name, onnx.helper.printable_type(va.type),
                        onnx.helper.printable_type(vb.type)))

    def check_initializers(self):
        consumed = set()
        outputs = set()
        for g in walk_graphs(self.fixed.graph):
            for n in g.node:
                consumed.update(i for i in n.input if i)
            outputs.update(v.name for v in g.output)
        orig_inits = {t.name: t for g in walk_graphs(self.orig.graph) for t in g.initializer}
        for g in walk_graphs(self.fixed.graph):
            counts = collections.Counter(t.name for t in g.initializer)
            for name, k in counts.items():
                if k > 1:
                    self.problem("initializer '%s' defined %d times" % (name, k))
            for t in g.initializer:
                if t.name not in consumed and t.name not in outputs:
                    self.problem("dead initializer '%s' (no node consumes it, not a graph output)" % t.name)
                if t.name in orig_inits:
                    a = numpy_helper.to_array(orig_inits[t.name])
                    b = numpy_helper.to_array(t)
                    if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                        self.problem("original initializer '%s' changed (dtype/shape/data)" % t.name)

    def check_nodes(self, orig_ranks):
        """Returns the prefixes (`<node>`) of the rewritten nodes."""
        o_nodes = list(self.orig.graph.node)
        f_nodes = list(self.fixed.graph.node)
        f_named = collections.defaultdict(list)
        for n in f_nodes:
            if n.name:
                f_named[n.name].append(n)
        rewritten = []
        matched = set()  # ids of FIXED nodes matched to ORIG nodes
        # The weight QDQ of a rewritten layer goes with it (the rewrite brings its own).
        replaced_chain = set()
        for n in o_nodes:
            if is_ct3d(n, orig_ranks):
                replaced_chain.update(id(c) for c in weight_chain(self.orig.graph, n))
        # Named ORIG nodes.
        for idx, n in enumerate(o_nodes):
            if not n.name:
                continue
            cands = [c for c in f_named.get(n.name, []) if id(c) not in matched]
            same = [c for c in cands if c == n]
            if same:
                matched.add(id(same[0]))
                continue
            if is_ct3d(n, orig_ranks) and not cands:
                rewritten.append((n.name, idx))
                continue
            if id(n) in replaced_chain and not cands:
                continue
            if cands:
                c = cands[0]
                matched.add(id(c))
                if c.op_type != n.op_type:
                    self.problem("node '%s' changed op_type %s -> %s" % (n.name, n.op_type, c.op_type))
                else:
                    diffs = []
                    if list(n.input) != list(c.input):
                        diffs.append("inputs %s -> %s" % (list(n.input), list(c.input)))
                    if list(n.output) != list(c.output):
                        diffs.append("outputs %s -> %s" % (list(n.output), list(c.output)))
                    if list(n.attribute) != list(c.attribute):
                        diffs.append("attributes differ")
                    if n.domain != c.domain:
                        diffs.append("domain %r -> %r" % (n.domain, c.domain))
                    self.problem("original node '%s' (%s) changed: %s" % (
                        n.name, n.op_type, ", ".join(diffs) or "doc_string/other fields differ"))
            else:
                self.problem("original node '%s' (%s) is missing" % (n.name, n.op_type))
        # Unnamed ORIG nodes: a multiset per op_type; a 3-D ConvTranspose may be gone (rewritten).
        f_unnamed = [c for c in f_nodes if not c.name]
        for idx, n in enumerate(o_nodes):
            if n.name:
                continue
            same = [c for c in f_unnamed if c == n and id(c) not in matched]
            if same:
                matched.add(id(same[0]))
            elif is_ct3d(n, orig_ranks):
                rewritten.append(("%s_%d" % (n.op_type, idx), idx))
            elif id(n) in replaced_chain:
                pass
            else:
                self.problem("original unnamed %s node #%d (outputs %s) is missing or changed" % (
                    n.op_type, idx, list(n.output)))
        unnamed_by_op = collections.Counter(n.op_type for n in o_nodes if not n.name and id(n) not in replaced_chain)
        fixed_unnamed_by_op = collections.Counter(n.op_type for n in f_unnamed)
        for op in set(unnamed_by_op) | set(fixed_unnamed_by_op):
            if op != "ConvTranspose" and unnamed_by_op[op] != fixed_unnamed_by_op[op]:
                self.problem("unnamed %s nodes: %d before, %d after" % (op, unnamed_by_op[op],
                                                                          fixed_unnamed_by_op[op]))
        self.new_nodes = [c for c in f_nodes if id(c) not in matched]
        return rewritten

    def check_new_names(self, rewritten, fixed_ranks):
        orig_names = all_names(self.orig)
        prefixes = [p for p, _ in rewritten]
        o_inits = {t.name: t for t in self.orig.graph.initializer}
        o_by_prefix = {}
        for (p, idx) in rewritten:
            o_by_prefix[p] = self.orig.graph.node[idx]
        pre_re = "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True)) or "(?!)"
        node_re = re.compile(r"^(%s)_fix_(%s)(?:_(\d+))?$" % (pre_re, STEP_RE))
        value_re = re.compile(r"^(%s)_fix_(%s)_out(?:_(\d+))?$" % (pre_re, STEP_RE))
        shape_re = re.compile(r"^(%s)_fix_shape_(%s)(?:_(\d+))?$" % (pre_re, STEP_RE))
        taps_re = re.compile(r"^(%s)_fix_taps(?:_(\d+))?$" % pre_re)
        wb_names = set()
        for n in o_by_prefix.values():
            wb_names.update(i for i in n.input[1:3] if i)
            for c in weight_chain(self.orig.graph, n):  # a quantised weight's constant, scale, zero point
                wb_names.update(i for i in c.input if i)
        wb_re = re.compile(r"^(%s)_fix_([A-Za-z0-9._-]+?)(?:_(\d+))?$" % (
            "|".join(re.escape(w) for w in sorted(wb_names, key=len, reverse=True)) or "(?!)"))

        new_node_names = [n.name for n in self.new_nodes]
        new_values = []
        rewritten_outputs = set()
        for n in o_by_prefix.values():
            rewritten_outputs.update(o for o in n.output if o)
        for n in self.new_nodes:
            new_values.extend(o for o in n.output if o and o not in orig_names)
            for o in n.output:
                if o and o in orig_names and o not in rewritten_outputs:
                    self.problem("new node '%s' writes '%s', a name of the original model that is not "
                                 "an output of a rewritten node" % (n.name, o))
        f_inits = [t.name for t in self.fixed.graph.initializer]
        new_inits = [t for t in f_inits if t not in o_inits]
        all_new = new_node_names + new_values + new_inits
        taken = orig_names | set(all_new)

        def check_suffix(kind, name, m):
            if not m.group(m.re.groups):
                return
            k = int(m.group(m.re.groups))
            base = name[: -(len(str(k)) + 1)]
            if k < 2:
                self.problem("new %s '%s': suffix must start at _2" % (kind, name))
                return
            for cand in [base] + ["%s_%d" % (base, j) for j in range(2, k)]:
                if cand not in taken:
                    self.problem("new %s '%s' has suffix _%d but '%s' is free" % (kind, name, k, cand))
                    return

        per_prefix = collections.defaultdict(list)
        for n in self.new_nodes:
            if n.op_type not in NEW_OPS or n.domain not in ("", "ai.onnx"):
                self.problem("new node '%s' has unexpected op %s" % (n.name, n.op_type))
            if not n.name:
                self.problem("new %s node (outputs %s) has no name" % (n.op_type, list(n.output)))
                continue
            if n.name in orig_names:
                self.problem("new node name '%s' clashes with a name of the original model" % n.name)
            m = node_re.match(n.name)
            if not m:
                self.problem("new node name '%s' does not follow <node>_fix_<step>[_k] for a rewritten node" % n.name)
                continue
            check_suffix("node", n.name, m)
            per_prefix[m.group(1)].append(n)
        for p in prefixes:
            if not per_prefix.get(p):
                self.problem("rewritten node '%s': no new nodes named '%s_fix_<step>'" % (p, p))
        dup = [k for k, v in collections.Counter(x for x in new_node_names if x).items() if v > 1]
        for d in dup:
            self.problem("new node name '%s' used more than once" % d)
        for v in new_values:
            m = value_re.match(v)
            if not m:
                self.problem("new value '%s' does not follow <node>_fix_<step>_out[_k]" % v)
            else:
                check_suffix("value", v, m)
        for t in new_inits:
            if t in orig_names:
                self.problem("new initializer '%s' clashes with a name of the original model" % t)
            m = shape_re.match(t) or taps_re.match(t) or wb_re.match(t)
            if not m:
                self.problem("new initializer '%s' does not follow <weight|bias>_fix_<fix-id>[_k], "
                             "<node>_fix_shape_<step>[_k] or <node>_fix_taps[_k]" % t)
            else:
                check_suffix("initializer", t, m)
        if self.strategy:
            self.check_strategy(per_prefix, fixed_ranks)

    def check_strategy(self, per_prefix, fixed_ranks):
        core_op = "Conv" if self.strategy == "conv3d-1x1x1" else "ConvTranspose"
        other_core = "Conv" if core_op == "ConvTranspose" else "ConvTranspose"
        taps = self.strategy == "convtranspose2d-d-taps"
        for p, nodes in per_prefix.items():
            matmuls = [n for n in nodes if n.op_type == "MatMul"]
            adds = [n for n in nodes if n.op_type == "Add"]
            if not taps and (matmuls or adds):
                self.problem("rewritten node '%s': new MatMul/Add under strategy %s" % (p, self.strategy))
            if taps:
                self.check_taps(p, nodes, matmuls, adds)
            core = [n for n in nodes if n.op_type == core_op]
            if len(core) != 1:
                self.problem("rewritten node '%s': %d new %s nodes, expected 1 for strategy %s"
                             % (p, len(core), core_op, self.strategy))
            if any(n.op_type == other_core for n in nodes):
                self.problem("rewritten node '%s': new %s node under strategy %s" % (p, other_core, self.strategy))
            for n in core:
                if core_op == "ConvTranspose":
                    r = fixed_ranks.get(n.input[1])
                    if r is not None and r != 4:
                        self.problem("new ConvTranspose '%s' has a rank-%d weight, expected 2-D (rank 4)" % (n.name, r))
                else:
                    k = attr(n, "kernel_shape")
                    w = [t for t in self.fixed.graph.initializer if t.name == n.input[1]]
                    kk = list(k) if k is not None else (list(w[0].dims[2:]) if w else None)
                    if kk != [1, 1, 1]:
                        self.problem("new Conv '%s' kernel %s, expected [1, 1, 1]" % (n.name, kk))
                    if list(attr(n, "strides", [1, 1, 1])) != [1, 1, 1] or \
                            list(attr(n, "dilations", [1, 1, 1])) != [1, 1, 1] or \
                            any(attr(n, "pads", [0] * 6)):
                        self.problem("new Conv '%s' must have strides/dilations 1 and pads 0" % n.name)

    def check_taps(self, p, nodes, matmuls, adds):
        """The D-tap rewrite: the 2-D ConvTranspose has no bias, one MatMul multiplies by a constant
        0/1 matrix (at most one 1 per row: each tap lands on one output depth or none), the bias
        (when the layer has one) comes in one Add of a [C_out, 1, 1, 1] constant."""
        inits = {t.name: t for t in self.fixed.graph.initializer}
        for n in nodes:
            if n.op_type == "ConvTranspose" and len(n.input) > 2 and n.input[2]:
                self.problem("rewritten node '%s': the 2-D ConvTranspose '%s' has a bias under %s"
                             % (p, n.name, self.strategy))
        if len(matmuls) != 1:
            self.problem("rewritten node '%s': %d new MatMul nodes, expected 1 for strategy %s"
                         % (p, len(matmuls), self.strategy))
        for n in matmuls:
            t = inits.get(n.input[1])
            if t is None:
                self.problem("new MatMul '%s': input 1 '%s' is not an initializer" % (n.name, n.input[1]))
                continue
            m = numpy_helper.to_array(t)
            rows = m.reshape(-1, m.shape[-1]) if m.ndim >= 2 else m.reshape(1, -1)
            if m.ndim < 2 or any(d != 1 for d in m.shape[:-2]) or not set(np.unique(m)) <= {0.0, 1.0} \
                    or (rows.sum(axis=1) > 1).any():
                self.problem("new MatMul '%s': its constant %s is not a 0/1 tap matrix with at most one 1 "
                             "per row" % (n.name, list(m.shape)))
        if len(adds) > 1:
            self.problem("rewritten node '%s': %d new Add nodes, expected at most 1" % (p, len(adds)))
        for n in adds:
            t = inits.get(n.input[1])
            if t is None or len(t.dims) != 4 or list(t.dims[1:]) != [1, 1, 1]:
                self.problem("new Add '%s': input 1 is not a [C_out, 1, 1, 1] bias" % n.name)


def main(argv):
    args = argv[1:]
    strategy = None
    if "--strategy" in args:
        i = args.index("--strategy")
        if i + 1 >= len(args):
            sys.stderr.write("check_fixed.py: --strategy needs a value\n")
            return 2
        strategy = args[i + 1]
        del args[i:i + 2]
        if strategy not in STRATEGIES:
            sys.stderr.write("check_fixed.py: unknown strategy %s\n" % strategy)
            return 2
    if len(args) != 3 or not args[2].isdigit():
        sys.stderr.write("usage: check_fixed.py ORIG.onnx FIXED.onnx EXPECTED_REWRITTEN [--strategy S]\n")
        return 2
    try:
        orig = onnx.load(args[0])
    except Exception as e:  # pylint: disable=broad-except
        sys.stderr.write("check_fixed.py: cannot load %s: %s\n" % (args[0], e))
        return 2
    try:
        fixed = onnx.load(args[1])
    except Exception as e:  # pylint: disable=broad-except
        print("problem: cannot load the fixed model %s: %s" % (args[1], e))
        print("check_fixed: 1 problems")
        return 1
    problems = Checker(orig, fixed, int(args[2]), strategy).run()
    for p in problems:
        print("problem: " + p)
    print("check_fixed: " + ("ok" if not problems else "%d problems" % len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
