// The AST of constraint expressions (API: include/bpulint/rules/expr.h): what
// expr_parse.cpp builds and expr_eval.cpp walks, and the names both print.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "bpulint/rules/expr.h"
#include "bpulint/rules/value.h"

namespace bpulint {
namespace expr_detail {

enum class NodeKind {
  Literal,     // literal
  RootIdent,   // name: a field of the root record
  BoundVar,    // name, slot: a quantifier variable
  Member,      // kids {base}, name
  Index,       // kids {base, index}
  Slice,       // kids {base, lo or null, hi or null}
  ListLit,     // kids: elements
  Neg,         // kids {operand}
  Not,         // kids {operand}
  And,         // kids: 2+ operands
  Or,          // kids: 2+ operands
  Arith,       // kids: 2+ operands; ops[i] sits between kids[i] and kids[i+1]
  Compare,     // same layout as Arith; `a < b < c` means a < b and b < c
  InRange,     // kids {x, lo, hi}; negated for `not in`
  InSet,       // kids {x, elements...}; negated for `not in`
  InList,      // kids {x, list}; negated for `not in`
  Call,        // func, kids: arguments
  Quantifier,  // func (All/Any/Count), name = variable, slot, kids {list, body}
};

enum class Op { Add, Sub, Mul, Div, FloorDiv, Mod, Eq, Ne, Lt, Le, Gt, Ge };

enum class Func { Len, Prod, Sum, Min, Max, Abs, Known, Range, CeilDiv, AlignUp, All, Any, Count, Map };

// Source spellings, defined in expr_parse.cpp beside the function table.
const char* function_name(Func func);
const char* op_symbol(Op op);

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  NodeKind kind = NodeKind::Literal;
  size_t offset = 0;  // where the construct starts in the source
  std::vector<NodePtr> kids;
  std::vector<Op> ops;
  Value literal;
  std::string name;
  FactId fact = 0;  // RootIdent: the interned name
  // Member of `root[k]` with a literal k >= 0 (`input[1].shape`): the
  // element's field can be asked of the source directly (see FactSource).
  bool element_field = false;
  size_t element_index = 0;
  FactId field_fact = 0;  // the member name, interned
  size_t slot = 0;
  Func func = Func::Len;
  bool negated = false;

  // Derived at parse time (see Parser::finish).
  int height = 1;
  bool uses_bound = false;  // mentions a quantifier variable somewhere inside
  bool fact_chain = false;  // ident/member/index/slice chain on a root name
  bool traced = false;      // a maximal fact chain: recorded in the trace
  std::string text;         // canonical source text
};

}  // namespace expr_detail

class Expr {
 public:
  std::string source;
  expr_detail::NodePtr root;
  std::vector<std::string> roots;
};

class Template {
 public:
  struct Piece {
    std::string literal;  // used when expr is null
    ExprPtr expr;
  };
  std::string source;
  std::vector<Piece> pieces;
};

}  // namespace bpulint
