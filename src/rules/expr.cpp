// Constraint expression language: lexer, recursive-descent parser, canonical
// printer and tri-state evaluator. See include/bpulint/expr.h for the API.
//
// Layout of this file:
//   1. limits and small helpers
//   2. lexer          (text -> tokens)
//   3. AST            (Node; canonical text is built bottom-up at parse time)
//   4. parser         (tokens -> AST; throws ParseFailure internally)
//   5. evaluator      (AST x facts -> Value; never throws by design)
//   6. public API     (Expr, Template; the only place exceptions are caught)
#include "bpulint/expr.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <locale>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace bpulint {
namespace {

// ===========================================================================
// 1. Limits and small helpers
// ===========================================================================

// Bounds both parser recursion and AST height, so hostile or machine-made
// rules fail with an error instead of overflowing the stack (in the parser,
// the evaluator, or the recursive destructor of the tree).
constexpr int kMaxDepth = 200;

// range(a, b) materialises a list; cap it so a typo cannot eat all memory.
constexpr int64_t kMaxRangeLength = int64_t{1} << 20;

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

const char* type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Unknown: return "unknown";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "string";
    case Value::Kind::List: return "list";
    case Value::Kind::Record: return "record";
  }
  return "?";
}

Value type_error(const std::string& what) { return Value::unknown("type error: " + what); }

// Shortest round-tripping text of a float literal that still reads back as a
// float (hence "2.0", not "2").
std::string float_literal_text(double d) {
  std::string text = Value::of_float(d).to_string();
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

std::string quote_string_literal(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "'";
}

// ===========================================================================
// 2. Lexer
// ===========================================================================

// Internal error signal of the lexer and parser; converted to ExprError at
// the public API boundary and never allowed to escape it.
struct ParseFailure {
  size_t offset;
  std::string message;
};

enum class Tok {
  End, Int, Float, String, Ident,
  And, Or, Not, In, True, False,                            // keywords
  LParen, RParen, LBracket, RBracket, LBrace, RBrace,
  Comma, Colon, Dot, DotDot,
  Plus, Minus, Star, Slash, SlashSlash, Percent,
  Eq, Ne, Lt, Le, Gt, Ge,
};

struct Token {
  Tok kind = Tok::End;
  size_t offset = 0;  // byte offset of the first character
  size_t length = 0;  // bytes of source text covered
  std::string text;   // identifier name or decoded string literal
  int64_t int_value = 0;
  double float_value = 0;
};

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

class Lexer {
 public:
  explicit Lexer(const std::string& src) : src_(src) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    for (;;) {
      skip_space();
      if (pos_ >= src_.size()) break;
      char c = src_[pos_];
      if (is_digit(c)) {
        tokens.push_back(lex_number());
      } else if (c == '\'' || c == '"') {
        tokens.push_back(lex_string());
      } else if (is_ident_start(c)) {
        tokens.push_back(lex_word());
      } else {
        tokens.push_back(lex_punct());
      }
    }
    Token end;
    end.offset = src_.size();
    tokens.push_back(end);
    return tokens;
  }

 private:
  void skip_space() {
    while (pos_ < src_.size() && (src_[pos_] == ' ' || src_[pos_] == '\t' ||
                                  src_[pos_] == '\n' || src_[pos_] == '\r')) {
      ++pos_;
    }
  }

  char at(size_t i) const { return i < src_.size() ? src_[i] : '\0'; }

  Token make(Tok kind, size_t start) const {
    Token t;
    t.kind = kind;
    t.offset = start;
    t.length = pos_ - start;
    return t;
  }

  // Integers are digits only. A float needs a digit after the '.', so that
  // `1..2` lexes as Int DotDot Int rather than as the float "1.".
  Token lex_number() {
    size_t start = pos_;
    while (is_digit(at(pos_))) ++pos_;
    bool is_float = false;
    if (at(pos_) == '.' && is_digit(at(pos_ + 1))) {
      is_float = true;
      ++pos_;
      while (is_digit(at(pos_))) ++pos_;
    }
    if (at(pos_) == 'e' || at(pos_) == 'E') {
      size_t exp = pos_ + 1;
      if (at(exp) == '+' || at(exp) == '-') ++exp;
      if (is_digit(at(exp))) {
        is_float = true;
        pos_ = exp;
        while (is_digit(at(pos_))) ++pos_;
      }
    }
    std::string digits = src_.substr(start, pos_ - start);
    if (is_float) {
      Token t = make(Tok::Float, start);
      std::istringstream in(digits);
      in.imbue(std::locale::classic());
      in >> t.float_value;
      if (in.fail() || !std::isfinite(t.float_value)) {
        throw ParseFailure{start, "float literal '" + digits + "' is out of range"};
      }
      return t;
    }
    Token t = make(Tok::Int, start);
    for (char d : digits) {
      int digit = d - '0';
      if (t.int_value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
        throw ParseFailure{start, "integer literal '" + digits + "' is too large"};
      }
      t.int_value = t.int_value * 10 + digit;
    }
    return t;
  }

  Token lex_string() {
    size_t start = pos_;
    char quote = src_[pos_++];
    std::string value;
    for (;;) {
      if (pos_ >= src_.size()) throw ParseFailure{start, "unterminated string"};
      char c = src_[pos_];
      if (c == quote) break;
      if (c == '\\') {
        char e = at(pos_ + 1);
        switch (e) {
          case '\\': case '\'': case '"': value += e; break;
          case 'n': value += '\n'; break;
          case 't': value += '\t'; break;
          default:
            throw ParseFailure{pos_, std::string("unknown escape '\\") + (e ? std::string(1, e) : "") + "' in string"};
        }
        pos_ += 2;
        continue;
      }
      value += c;
      ++pos_;
    }
    ++pos_;  // closing quote
    Token t = make(Tok::String, start);
    t.text = std::move(value);
    return t;
  }

  Token lex_word() {
    size_t start = pos_;
    while (is_ident_char(at(pos_))) ++pos_;
    std::string word = src_.substr(start, pos_ - start);
    static const std::pair<const char*, Tok> kKeywords[] = {
        {"and", Tok::And}, {"or", Tok::Or},     {"not", Tok::Not},
        {"in", Tok::In},   {"true", Tok::True}, {"false", Tok::False},
    };
    for (const auto& [name, kind] : kKeywords) {
      if (word == name) return make(kind, start);
    }
    Token t = make(Tok::Ident, start);
    t.text = std::move(word);
    return t;
  }

  Token lex_punct() {
    static const std::pair<const char*, Tok> kTwoChar[] = {
        {"..", Tok::DotDot}, {"//", Tok::SlashSlash}, {"==", Tok::Eq},
        {"!=", Tok::Ne},     {"<=", Tok::Le},         {">=", Tok::Ge},
    };
    static const std::pair<char, Tok> kOneChar[] = {
        {'(', Tok::LParen}, {')', Tok::RParen}, {'[', Tok::LBracket}, {']', Tok::RBracket},
        {'{', Tok::LBrace}, {'}', Tok::RBrace}, {',', Tok::Comma},    {':', Tok::Colon},
        {'.', Tok::Dot},    {'+', Tok::Plus},   {'-', Tok::Minus},    {'*', Tok::Star},
        {'/', Tok::Slash},  {'%', Tok::Percent}, {'<', Tok::Lt},      {'>', Tok::Gt},
    };
    size_t start = pos_;
    for (const auto& [text, kind] : kTwoChar) {
      if (src_.compare(pos_, 2, text) == 0) {
        pos_ += 2;
        return make(kind, start);
      }
    }
    char c = src_[pos_];
    for (const auto& [ch, kind] : kOneChar) {
      if (c == ch) {
        ++pos_;
        return make(kind, start);
      }
    }
    if (c == '=') throw ParseFailure{start, "unexpected character '='; use '==' to compare"};
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      throw ParseFailure{start, std::string("unexpected character '") + c + "'"};
    }
    static const char kHex[] = "0123456789ABCDEF";
    throw ParseFailure{start, std::string("unexpected byte 0x") + kHex[u >> 4] + kHex[u & 15]};
  }

  const std::string& src_;
  size_t pos_ = 0;
};

// ===========================================================================
// 3. AST
// ===========================================================================

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

struct FuncInfo {
  const char* name;
  Func func;
  size_t min_args;
  size_t max_args;  // SIZE_MAX: variadic
  bool quantifier;
};

constexpr size_t kVariadic = SIZE_MAX;

constexpr FuncInfo kFunctions[] = {
    {"len", Func::Len, 1, 1, false},         {"prod", Func::Prod, 1, 1, false},
    {"sum", Func::Sum, 1, 1, false},         {"min", Func::Min, 1, kVariadic, false},
    {"max", Func::Max, 1, kVariadic, false}, {"abs", Func::Abs, 1, 1, false},
    {"known", Func::Known, 1, 1, false},     {"range", Func::Range, 2, 2, false},
    {"ceil_div", Func::CeilDiv, 2, 2, false}, {"align_up", Func::AlignUp, 2, 2, false},
    {"all", Func::All, 0, 0, true},          {"any", Func::Any, 0, 0, true},
    {"count", Func::Count, 0, 0, true},          {"map", Func::Map, 0, 0, true},
};

const FuncInfo* find_function(const std::string& name) {
  for (const FuncInfo& f : kFunctions) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

const char* function_name(Func func) {
  for (const FuncInfo& f : kFunctions) {
    if (f.func == func) return f.name;
  }
  return "?";
}

const char* op_symbol(Op op) {
  switch (op) {
    case Op::Add: return "+";
    case Op::Sub: return "-";
    case Op::Mul: return "*";
    case Op::Div: return "/";
    case Op::FloorDiv: return "//";
    case Op::Mod: return "%";
    case Op::Eq: return "==";
    case Op::Ne: return "!=";
    case Op::Lt: return "<";
    case Op::Le: return "<=";
    case Op::Gt: return ">";
    case Op::Ge: return ">=";
  }
  return "?";
}

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

// Binding strength used by the canonical printer to decide on parentheses.
int precedence(const Node& n) {
  switch (n.kind) {
    case NodeKind::Or: return 1;
    case NodeKind::And: return 2;
    case NodeKind::Not: return 3;
    case NodeKind::Compare:
    case NodeKind::InRange:
    case NodeKind::InSet:
    case NodeKind::InList: return 4;
    case NodeKind::Arith: return (n.ops[0] == Op::Add || n.ops[0] == Op::Sub) ? 5 : 6;
    case NodeKind::Neg: return 7;
    default: return 8;
  }
}

std::string operand_text(const Node& kid, int min_precedence) {
  return precedence(kid) >= min_precedence ? kid.text : "(" + kid.text + ")";
}

std::string join_texts(const std::vector<NodePtr>& kids, size_t from, const char* sep) {
  std::string out;
  for (size_t i = from; i < kids.size(); ++i) {
    if (i > from) out += sep;
    out += kids[i]->text;
  }
  return out;
}

// Canonical text of `n`, composed from its children's (already computed)
// canonical texts; so the printer never recurses.
std::string canonical_text(const Node& n) {
  const auto& k = n.kids;
  switch (n.kind) {
    case NodeKind::Literal:
      switch (n.literal.kind()) {
        case Value::Kind::Float: return float_literal_text(n.literal.as_number());
        case Value::Kind::String: return quote_string_literal(n.literal.as_string());
        default: return n.literal.to_string();
      }
    case NodeKind::RootIdent:
    case NodeKind::BoundVar: return n.name;
    case NodeKind::Member: return operand_text(*k[0], 8) + "." + n.name;
    case NodeKind::Index: return operand_text(*k[0], 8) + "[" + k[1]->text + "]";
    case NodeKind::Slice:
      return operand_text(*k[0], 8) + "[" + (k[1] ? k[1]->text : "") + ":" +
             (k[2] ? k[2]->text : "") + "]";
    case NodeKind::ListLit: return "[" + join_texts(k, 0, ", ") + "]";
    case NodeKind::Neg: return "-" + operand_text(*k[0], 7);
    case NodeKind::Not: return "not " + operand_text(*k[0], 3);
    case NodeKind::And:
    case NodeKind::Or: {
      int p = precedence(n);
      std::string out;
      for (size_t i = 0; i < k.size(); ++i) {
        if (i > 0) out += n.kind == NodeKind::And ? " and " : " or ";
        out += operand_text(*k[i], p + 1);
      }
      return out;
    }
    case NodeKind::Arith:
    case NodeKind::Compare: {
      int p = precedence(n);
      std::string out = operand_text(*k[0], p + 1);
      for (size_t i = 1; i < k.size(); ++i) {
        out += std::string(" ") + op_symbol(n.ops[i - 1]) + " " + operand_text(*k[i], p + 1);
      }
      return out;
    }
    case NodeKind::InRange:
    case NodeKind::InSet:
    case NodeKind::InList: {
      std::string out = operand_text(*k[0], 5) + (n.negated ? " not in " : " in ");
      if (n.kind == NodeKind::InRange) return out + operand_text(*k[1], 5) + ".." + operand_text(*k[2], 5);
      if (n.kind == NodeKind::InSet) return out + "{" + join_texts(k, 1, ", ") + "}";
      return out + operand_text(*k[1], 5);
    }
    case NodeKind::Call: return std::string(function_name(n.func)) + "(" + join_texts(k, 0, ", ") + ")";
    case NodeKind::Quantifier:
      return std::string(function_name(n.func)) + "(" + n.name + " in " + k[0]->text + ": " + k[1]->text + ")";
  }
  return "?";
}

// ===========================================================================
// 4. Parser
// ===========================================================================
//
//   or_expr    := and_expr ('or' and_expr)*
//   and_expr   := not_expr ('and' not_expr)*
//   not_expr   := 'not' not_expr | comparison
//   comparison := additive ( (cmp_op additive)+
//                          | ['not'] 'in' ( '{' elems '}' | additive ['..' additive] ) )?
//   additive   := multiplicative (('+' | '-') multiplicative)*
//   multiplicative := unary (('*' | '/' | '//' | '%') unary)*
//   unary      := '-' unary | postfix
//   postfix    := primary ( '.' IDENT | '[' index_or_slice ']' )*
//   primary    := INT | FLOAT | STRING | 'true' | 'false' | '[' elems ']'
//               | '(' or_expr ')' | IDENT | IDENT '(' args ')'

class Parser {
 public:
  Parser(const std::string& src, std::vector<Token> tokens) : src_(src), tokens_(std::move(tokens)) {}

  NodePtr parse_all() {
    if (peek().kind == Tok::End) fail(0, "empty expression");
    NodePtr node = parse_or();
    if (peek().kind != Tok::End) fail(peek().offset, "unexpected " + describe(peek()));
    return node;
  }

  std::vector<std::string> root_names() const { return {roots_.begin(), roots_.end()}; }

 private:
  // Counts nesting of recursive productions; see kMaxDepth.
  class DepthGuard {
   public:
    DepthGuard(Parser& parser, size_t offset) : parser_(parser) {
      if (++parser_.depth_ > kMaxDepth) parser_.fail_too_deep(offset);
    }
    ~DepthGuard() { --parser_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Parser& parser_;
  };

  [[noreturn]] void fail(size_t offset, std::string message) const {
    throw ParseFailure{offset, std::move(message)};
  }
  [[noreturn]] void fail_too_deep(size_t offset) const {
    fail(offset, "expression is nested too deeply (limit is " + std::to_string(kMaxDepth) + " levels)");
  }

  const Token& peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& advance() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool accept(Tok kind) {
    if (peek().kind != kind) return false;
    advance();
    return true;
  }
  const Token& expect(Tok kind, const char* what) {
    if (peek().kind != kind) fail(peek().offset, std::string("expected ") + what + " but found " + describe(peek()));
    return advance();
  }

  std::string describe(const Token& t) const {
    if (t.kind == Tok::End) return "end of expression";
    return "'" + src_.substr(t.offset, t.length) + "'";
  }

  static NodePtr make(NodeKind kind, size_t offset) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->offset = offset;
    return n;
  }

  // Completes a freshly built node: height check, trace bookkeeping and
  // canonical text. Every node passes through here exactly once.
  NodePtr finish(NodePtr n) {
    int height = 0;
    bool uses_bound = n->kind == NodeKind::BoundVar;
    for (const NodePtr& kid : n->kids) {
      if (!kid) continue;
      height = std::max(height, kid->height);
      uses_bound = uses_bound || kid->uses_bound;
    }
    n->height = height + 1;
    if (n->height > kMaxDepth) fail_too_deep(n->offset);
    n->uses_bound = uses_bound;
    mark_fact_chain(*n);
    mark_element_field(*n);
    mark_bound_field(*n);
    n->text = canonical_text(*n);
    return n;
  }

  static void mark_element_field(Node& n) {
    if (n.kind != NodeKind::Member || n.kids[0]->kind != NodeKind::Index) return;
    const Node& index = *n.kids[0];
    const Node& list = *index.kids[0];
    const Node& k = *index.kids[1];
    if (list.kind != NodeKind::RootIdent || k.kind != NodeKind::Literal || k.literal.kind() != Value::Kind::Int ||
        k.literal.as_int() < 0) {
      return;
    }
    n.element_field = true;
    n.element_index = static_cast<size_t>(k.literal.as_int());
    n.field_fact = intern_fact(n.name);
  }

  // `t.dtype` in `all(t in input: ...)`: the bound element's field, asked of
  // the source directly when the quantifier walks a root list lazily.
  static void mark_bound_field(Node& n) {
    if (n.kind == NodeKind::Member && n.kids[0]->kind == NodeKind::BoundVar) n.field_fact = intern_fact(n.name);
  }

  // A fact chain is `root_name(.member | [index] | [lo:hi])*` where no index
  // mentions a quantifier variable. Only the outermost link of a chain is
  // traced, so `input[0].shape[2]` is recorded but not `input[0]`; a chain
  // cut short by a bound index (`kernel_shape[i]`) records its prefix.
  static void mark_fact_chain(Node& n) {
    switch (n.kind) {
      case NodeKind::RootIdent: n.fact_chain = true; break;
      case NodeKind::Member:
      case NodeKind::Index:
      case NodeKind::Slice: {
        bool index_bound = false;
        for (size_t i = 1; i < n.kids.size(); ++i) {
          if (n.kids[i] && n.kids[i]->uses_bound) index_bound = true;
        }
        n.fact_chain = n.kids[0]->fact_chain && !index_bound;
        if (n.fact_chain) n.kids[0]->traced = false;
        break;
      }
      default: break;
    }
    n.traced = n.fact_chain;
  }

  NodePtr parse_or() {
    DepthGuard guard(*this, peek().offset);
    return parse_logical(Tok::Or, NodeKind::Or, &Parser::parse_and);
  }

  NodePtr parse_and() { return parse_logical(Tok::And, NodeKind::And, &Parser::parse_not); }

  // `a or b or c` becomes one n-ary node, which keeps long chains shallow.
  NodePtr parse_logical(Tok op, NodeKind kind, NodePtr (Parser::*operand)()) {
    size_t offset = peek().offset;
    NodePtr first = (this->*operand)();
    if (peek().kind != op) return first;
    NodePtr n = make(kind, offset);
    n->kids.push_back(std::move(first));
    while (accept(op)) n->kids.push_back((this->*operand)());
    return finish(std::move(n));
  }

  NodePtr parse_not() {
    if (peek().kind != Tok::Not) return parse_comparison();
    size_t offset = advance().offset;
    DepthGuard guard(*this, offset);
    NodePtr n = make(NodeKind::Not, offset);
    n->kids.push_back(parse_not());
    return finish(std::move(n));
  }

  static std::optional<Op> comparison_op(Tok kind) {
    switch (kind) {
      case Tok::Eq: return Op::Eq;
      case Tok::Ne: return Op::Ne;
      case Tok::Lt: return Op::Lt;
      case Tok::Le: return Op::Le;
      case Tok::Gt: return Op::Gt;
      case Tok::Ge: return Op::Ge;
      default: return std::nullopt;
    }
  }

  NodePtr parse_comparison() {
    size_t offset = peek().offset;
    NodePtr left = parse_additive();
    if (peek().kind == Tok::In || (peek().kind == Tok::Not && peek(1).kind == Tok::In)) {
      return parse_membership(std::move(left), offset);
    }
    if (!comparison_op(peek().kind)) return left;
    NodePtr n = make(NodeKind::Compare, offset);
    n->kids.push_back(std::move(left));
    while (auto op = comparison_op(peek().kind)) {
      advance();
      n->ops.push_back(*op);
      n->kids.push_back(parse_additive());
    }
    return finish(std::move(n));
  }

  // After `x [not] in`: a set literal, a range `lo..hi`, or a list expression.
  NodePtr parse_membership(NodePtr x, size_t offset) {
    bool negated = accept(Tok::Not);
    expect(Tok::In, "'in'");
    NodePtr n = make(NodeKind::InList, offset);
    n->negated = negated;
    n->kids.push_back(std::move(x));
    if (peek().kind == Tok::LBrace) {
      n->kind = NodeKind::InSet;
      advance();
      parse_elements(Tok::RBrace, "'}'", n->kids);
      return finish(std::move(n));
    }
    n->kids.push_back(parse_additive());
    if (accept(Tok::DotDot)) {
      n->kind = NodeKind::InRange;
      n->kids.push_back(parse_additive());
    }
    return finish(std::move(n));
  }

  // Comma-separated expressions up to `close`; a trailing comma is allowed
  // so YAML authors can write one element per line.
  void parse_elements(Tok close, const char* close_text, std::vector<NodePtr>& out) {
    while (!accept(close)) {
      out.push_back(parse_or());
      if (accept(close)) return;
      if (!accept(Tok::Comma)) {
        fail(peek().offset, std::string("expected ',' or ") + close_text + " but found " + describe(peek()));
      }
    }
  }

  NodePtr parse_additive() {
    return parse_arith({{Tok::Plus, Op::Add}, {Tok::Minus, Op::Sub}}, &Parser::parse_multiplicative);
  }

  NodePtr parse_multiplicative() {
    return parse_arith({{Tok::Star, Op::Mul}, {Tok::Slash, Op::Div}, {Tok::SlashSlash, Op::FloorDiv},
                        {Tok::Percent, Op::Mod}},
                       &Parser::parse_unary);
  }

  // One left-associative precedence level, as an n-ary Arith node.
  NodePtr parse_arith(std::initializer_list<std::pair<Tok, Op>> table, NodePtr (Parser::*operand)()) {
    auto match = [&](Tok kind) -> std::optional<Op> {
      for (const auto& [tok, op] : table) {
        if (tok == kind) return op;
      }
      return std::nullopt;
    };
    size_t offset = peek().offset;
    NodePtr first = (this->*operand)();
    if (!match(peek().kind)) return first;
    NodePtr n = make(NodeKind::Arith, offset);
    n->kids.push_back(std::move(first));
    while (auto op = match(peek().kind)) {
      advance();
      n->ops.push_back(*op);
      n->kids.push_back((this->*operand)());
    }
    return finish(std::move(n));
  }

  NodePtr parse_unary() {
    if (peek().kind != Tok::Minus) return parse_postfix();
    size_t offset = advance().offset;
    DepthGuard guard(*this, offset);
    NodePtr n = make(NodeKind::Neg, offset);
    n->kids.push_back(parse_unary());
    return finish(std::move(n));
  }

  NodePtr parse_postfix() {
    size_t offset = peek().offset;
    NodePtr node = parse_primary();
    for (;;) {
      if (accept(Tok::Dot)) {
        const Token& name = expect(Tok::Ident, "a field name after '.'");
        NodePtr n = make(NodeKind::Member, offset);
        n->name = name.text;
        n->kids.push_back(std::move(node));
        node = finish(std::move(n));
      } else if (accept(Tok::LBracket)) {
        node = parse_index_or_slice(std::move(node), offset);
      } else {
        return node;
      }
    }
  }

  // After '[': `i]`, `lo:hi]`, `lo:]`, `:hi]` or `:]`.
  NodePtr parse_index_or_slice(NodePtr base, size_t offset) {
    NodePtr lo;
    if (peek().kind != Tok::Colon) {
      lo = parse_or();
      if (accept(Tok::RBracket)) {
        NodePtr n = make(NodeKind::Index, offset);
        n->kids.push_back(std::move(base));
        n->kids.push_back(std::move(lo));
        return finish(std::move(n));
      }
    }
    expect(Tok::Colon, "']' or ':'");
    NodePtr hi;
    if (peek().kind != Tok::RBracket) hi = parse_or();
    expect(Tok::RBracket, "']'");
    NodePtr n = make(NodeKind::Slice, offset);
    n->kids.push_back(std::move(base));
    n->kids.push_back(std::move(lo));
    n->kids.push_back(std::move(hi));
    return finish(std::move(n));
  }

  NodePtr literal(const Token& t, Value v) {
    NodePtr n = make(NodeKind::Literal, t.offset);
    n->literal = std::move(v);
    return finish(std::move(n));
  }

  NodePtr parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::Int: return literal(advance(), Value::of_int(t.int_value));
      case Tok::Float: return literal(advance(), Value::of_float(t.float_value));
      case Tok::String: return literal(advance(), Value::of_string(t.text));
      case Tok::True: return literal(advance(), Value::of_bool(true));
      case Tok::False: return literal(advance(), Value::of_bool(false));
      case Tok::LParen: {
        advance();
        NodePtr inner = parse_or();
        expect(Tok::RParen, "')'");
        return inner;
      }
      case Tok::LBracket: {
        NodePtr n = make(NodeKind::ListLit, advance().offset);
        parse_elements(Tok::RBracket, "']'", n->kids);
        return finish(std::move(n));
      }
      case Tok::LBrace:
        fail(t.offset, "a set literal '{...}' may only follow 'in'");
      case Tok::Ident:
        if (peek(1).kind == Tok::LParen) return parse_call();
        return parse_identifier();
      default:
        fail(t.offset, "expected an expression but found " + describe(t));
    }
  }

  // Quantifier variables shadow root facts; resolved here, once, so that
  // evaluation is a slot lookup rather than a name search.
  NodePtr parse_identifier() {
    const Token& t = advance();
    for (size_t i = scope_.size(); i-- > 0;) {
      if (scope_[i] == t.text) {
        NodePtr n = make(NodeKind::BoundVar, t.offset);
        n->name = t.text;
        n->slot = i;
        return finish(std::move(n));
      }
    }
    roots_.insert(t.text);
    NodePtr n = make(NodeKind::RootIdent, t.offset);
    n->name = t.text;
    n->fact = intern_fact(t.text);
    return finish(std::move(n));
  }

  NodePtr parse_call() {
    const Token& name = advance();
    const FuncInfo* info = find_function(name.text);
    if (!info) fail(name.offset, "unknown function '" + name.text + "'");
    expect(Tok::LParen, "'('");
    if (info->quantifier) return parse_quantifier(*info, name.offset);
    NodePtr n = make(NodeKind::Call, name.offset);
    n->func = info->func;
    parse_arguments(n->kids);
    size_t count = n->kids.size();
    if (count < info->min_args || count > info->max_args) {
      std::string expected = info->max_args == kVariadic ? "at least " + std::to_string(info->min_args)
                                                         : std::to_string(info->min_args);
      fail(name.offset, std::string(info->name) + "() takes " + expected + " argument" +
                            (info->min_args == 1 ? "" : "s") + ", got " + std::to_string(count));
    }
    return finish(std::move(n));
  }

  void parse_arguments(std::vector<NodePtr>& out) {
    if (accept(Tok::RParen)) return;
    for (;;) {
      out.push_back(parse_or());
      if (accept(Tok::RParen)) return;
      if (!accept(Tok::Comma)) fail(peek().offset, "expected ',' or ')' but found " + describe(peek()));
    }
  }

  // After `all(`: `v in LIST: condition)`. `v` is visible in the condition
  // only, not in LIST.
  NodePtr parse_quantifier(const FuncInfo& info, size_t offset) {
    std::string usage = std::string(" (usage: ") + info.name + "(v in LIST: condition))";
    if (peek().kind != Tok::Ident) {
      fail(peek().offset, "expected a variable name but found " + describe(peek()) + usage);
    }
    NodePtr n = make(NodeKind::Quantifier, offset);
    n->func = info.func;
    n->name = advance().text;
    n->slot = scope_.size();
    if (peek().kind != Tok::In) fail(peek().offset, "expected 'in' but found " + describe(peek()) + usage);
    advance();
    n->kids.push_back(parse_or());
    if (peek().kind != Tok::Colon) fail(peek().offset, "expected ':' but found " + describe(peek()) + usage);
    advance();
    scope_.push_back(n->name);
    n->kids.push_back(parse_or());
    scope_.pop_back();
    expect(Tok::RParen, "')'");
    return finish(std::move(n));
  }

  const std::string& src_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<std::string> scope_;  // quantifier variables, innermost last
  std::set<std::string> roots_;
};

// ===========================================================================
// 5. Evaluator
// ===========================================================================

// Result of evaluating a node: either a pointer into long-lived data (the
// facts, a literal in the AST, the list a quantifier iterates) or an owned
// temporary. Lets `input[0].shape[2]` walk the facts without copying them.
class Ref {
 public:
  static Ref to(const Value& v) {
    Ref r;
    r.ptr_ = &v;
    return r;
  }
  static Ref own(Value v) {
    Ref r;
    r.owned_ = std::move(v);
    return r;
  }
  const Value& get() const { return ptr_ ? *ptr_ : owned_; }
  Value take() && { return ptr_ ? *ptr_ : std::move(owned_); }

  // A part of this value (a list item, a record field). Borrowed only if
  // this Ref is borrowed; otherwise the part must be copied out before the
  // owning temporary dies.
  Ref part(const Value& child) const { return ptr_ ? to(child) : own(child); }

 private:
  const Value* ptr_ = nullptr;
  Value owned_;
};

// Tri-state structural equality: [1, ?] == [2, ?] is false (a definite
// mismatch wins), [1, ?] == [1, 2] is unknown. Leaves use Value::equals.
Value tri_equals(const Value& a, const Value& b) {
  if (a.is_unknown()) return a;
  if (b.is_unknown()) return b;
  bool lists = a.kind() == Value::Kind::List && b.kind() == Value::Kind::List;
  bool records = a.kind() == Value::Kind::Record && b.kind() == Value::Kind::Record;
  if (!lists && !records) return Value::of_bool(a.equals(b));
  std::optional<Value> unknown;
  auto merge = [&](const Value& r) {
    if (r.is_unknown()) {
      if (!unknown) unknown = r;
      return true;
    }
    return r.as_bool();
  };
  if (lists) {
    if (a.items().size() != b.items().size()) return Value::of_bool(false);
    for (size_t i = 0; i < a.items().size(); ++i) {
      if (!merge(tri_equals(a.items()[i], b.items()[i]))) return Value::of_bool(false);
    }
  } else {
    if (a.fields().size() != b.fields().size()) return Value::of_bool(false);
    for (auto x = a.fields().begin(), y = b.fields().begin(); x != a.fields().end(); ++x, ++y) {
      if (x->first != y->first) return Value::of_bool(false);
      if (!merge(tri_equals(x->second, y->second))) return Value::of_bool(false);
    }
  }
  return unknown ? *unknown : Value::of_bool(true);
}

Value negate(Value v) { return v.kind() == Value::Kind::Bool ? Value::of_bool(!v.as_bool()) : v; }

// Exact three-way comparison of an int and a finite double.
int compare_int_double(int64_t i, double d) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (d >= kTwo63) return -1;
  if (d < -kTwo63) return 1;
  double whole = std::trunc(d);
  int64_t w = static_cast<int64_t>(whole);
  if (i != w) return i < w ? -1 : 1;
  double frac = d - whole;
  return frac > 0 ? -1 : (frac < 0 ? 1 : 0);
}

// Three-way numeric comparison; both arguments must be numbers, not NaN.
int compare_numbers(const Value& a, const Value& b) {
  bool ai = a.kind() == Value::Kind::Int, bi = b.kind() == Value::Kind::Int;
  if (ai && bi) return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  if (ai) return compare_int_double(a.as_int(), b.as_number());
  if (bi) return -compare_int_double(b.as_int(), a.as_number());
  double x = a.as_number(), y = b.as_number();
  return x < y ? -1 : (x > y ? 1 : 0);
}

bool is_nan(const Value& v) { return v.kind() == Value::Kind::Float && std::isnan(v.as_number()); }

Value compare(Op op, const Value& a, const Value& b) {
  if (a.is_unknown()) return a;
  if (b.is_unknown()) return b;
  if (op == Op::Eq) return tri_equals(a, b);
  if (op == Op::Ne) return negate(tri_equals(a, b));
  int c = 0;
  if (a.is_number() && b.is_number()) {
    if (is_nan(a) || is_nan(b)) return Value::unknown("comparison with NaN");
    c = compare_numbers(a, b);
  } else if (a.kind() == Value::Kind::String && b.kind() == Value::Kind::String) {
    c = a.as_string().compare(b.as_string());
  } else {
    return type_error(std::string("cannot compare ") + type_name(a) + " and " + type_name(b) + " with '" +
                      op_symbol(op) + "'");
  }
  switch (op) {
    case Op::Lt: return Value::of_bool(c < 0);
    case Op::Le: return Value::of_bool(c <= 0);
    case Op::Gt: return Value::of_bool(c > 0);
    default: return Value::of_bool(c >= 0);
  }
}

Value overflow() { return Value::unknown("integer overflow"); }
Value division_by_zero() { return Value::unknown("division by zero"); }

// Python-style floor division and modulo; callers have excluded b == 0.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a % b < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;  // a % -1 overflows in C++ for INT64_MIN
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

Value int_arith(Op op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
    case Op::Add: return __builtin_add_overflow(a, b, &r) ? overflow() : Value::of_int(r);
    case Op::Sub: return __builtin_sub_overflow(a, b, &r) ? overflow() : Value::of_int(r);
    case Op::Mul: return __builtin_mul_overflow(a, b, &r) ? overflow() : Value::of_int(r);
    default: break;
  }
  if (b == 0) return division_by_zero();
  if (op == Op::Mod) return Value::of_int(floor_mod(a, b));
  if (a == kInt64Min && b == -1) return overflow();
  if (op == Op::FloorDiv) return Value::of_int(floor_div(a, b));
  // Op::Div: stay integral when exact, so `c / group` can index or compare as an int.
  if (a % b == 0) return Value::of_int(a / b);
  return Value::of_float(static_cast<double>(a) / static_cast<double>(b));
}

Value float_arith(Op op, double a, double b) {
  double r = 0;
  switch (op) {
    case Op::Add: r = a + b; break;
    case Op::Sub: r = a - b; break;
    case Op::Mul: r = a * b; break;
    default:
      if (b == 0) return division_by_zero();
      if (op == Op::Div) {
        r = a / b;
      } else if (op == Op::FloorDiv) {
        r = std::floor(a / b);
      } else {
        r = std::fmod(a, b);
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
      }
  }
  if (!std::isfinite(r)) return Value::unknown("float overflow");
  return Value::of_float(r);
}

Value arith(Op op, const Value& a, const Value& b) {
  if (a.is_unknown()) return a;
  if (b.is_unknown()) return b;
  if (a.kind() == Value::Kind::Int && b.kind() == Value::Kind::Int) return int_arith(op, a.as_int(), b.as_int());
  if (a.is_number() && b.is_number()) return float_arith(op, a.as_number(), b.as_number());
  if (op == Op::Add && a.kind() == b.kind()) {
    if (a.kind() == Value::Kind::String) return Value::of_string(a.as_string() + b.as_string());
    if (a.kind() == Value::Kind::List) {
      std::vector<Value> items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return Value::of_list(std::move(items));
    }
  }
  return type_error(std::string("cannot apply '") + op_symbol(op) + "' to " + type_name(a) + " and " +
                    type_name(b));
}

// Deep: a list or record is known only if everything inside it is.
bool fully_known(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Unknown: return false;
    case Value::Kind::List:
      return std::all_of(v.items().begin(), v.items().end(), fully_known);
    case Value::Kind::Record:
      return std::all_of(v.fields().begin(), v.fields().end(),
                         [](const auto& field) { return fully_known(field.second); });
    default: return true;
  }
}

// Folds Kleene and/or: `dominant` (false for and, true for or) wins
// outright; otherwise the first unknown (or non-bool) operand is reported.
class KleeneFold {
 public:
  explicit KleeneFold(bool dominant) : dominant_(dominant) {}

  // Returns true once the result is decided by a dominant operand.
  bool add(const Value& v, const char* context) {
    if (v.kind() == Value::Kind::Bool) return decided_ = decided_ || v.as_bool() == dominant_;
    if (!unknown_) {
      unknown_ = v.is_unknown() ? v : type_error(std::string(context) + " needs a bool, got " + type_name(v));
    }
    return decided_;
  }

  Value result() const {
    if (decided_) return Value::of_bool(dominant_);
    return unknown_ ? *unknown_ : Value::of_bool(!dominant_);
  }

 private:
  bool dominant_;
  bool decided_ = false;
  std::optional<Value> unknown_;
};

class Evaluator {
 public:
  Evaluator(const FactSource& root, Trace* trace) : root_(root), trace_(trace) {}

  Ref eval(const Node& n) {
    if (!n.traced || !trace_) return eval_node(n);
    // Reserve the trace slot before evaluating, so `shape[axis]` is listed
    // before the `axis` it contains (source order).
    size_t slot = reserve_trace_slot(n.text);
    Ref r = eval_node(n);
    if (slot != kNoSlot) (*trace_)[slot].value = r.get();
    return r;
  }

 private:
  static constexpr size_t kNoSlot = SIZE_MAX;

  size_t reserve_trace_slot(const std::string& text) {
    for (const TraceEntry& e : *trace_) {
      if (e.text == text) return kNoSlot;
    }
    trace_->push_back({text, Value::unknown("not evaluated")});
    return trace_->size() - 1;
  }

  Ref eval_node(const Node& n) {
    switch (n.kind) {
      case NodeKind::Literal: return Ref::to(n.literal);
      case NodeKind::RootIdent: return eval_root_ident(n);
      case NodeKind::BoundVar: return eval_bound_var(n);
      case NodeKind::Member: return eval_member(n);
      case NodeKind::Index: return eval_index(n);
      case NodeKind::Slice: return eval_slice(n);
      case NodeKind::ListLit: return Ref::own(eval_list_literal(n));
      case NodeKind::Neg: return Ref::own(eval_neg(n));
      case NodeKind::Not: return Ref::own(eval_not(n));
      case NodeKind::And: return Ref::own(eval_logical(n, false, "'and'"));
      case NodeKind::Or: return Ref::own(eval_logical(n, true, "'or'"));
      case NodeKind::Arith: return Ref::own(eval_arith(n));
      case NodeKind::Compare: return Ref::own(eval_compare(n));
      case NodeKind::InRange: return Ref::own(eval_in_range(n));
      case NodeKind::InSet: return Ref::own(eval_in_set(n));
      case NodeKind::InList: return Ref::own(eval_in_list(n));
      case NodeKind::Call: return Ref::own(eval_call(n));
      case NodeKind::Quantifier: return Ref::own(eval_quantifier(n));
    }
    return Ref::own(Value::unknown("internal error: bad node"));
  }

  Ref eval_root_ident(const Node& n) {
    const Value* v = root_.fact(n.fact, n.name);
    if (!v) return Ref::own(Value::unknown("no fact '" + n.name + "'"));
    return Ref::to(*v);
  }

  // A lazily bound element is read from its list only when the body needs
  // all of it; its fields are asked of the source one by one (eval_member).
  Ref eval_bound_var(const Node& n) {
    const Binding& b = env_.at(n.slot);
    if (b.value != nullptr) return Ref::to(*b.value);
    const Value* list = root_.fact(b.list->fact, b.list->name);
    if (list == nullptr || list->kind() != Value::Kind::List || b.index >= list->items().size()) {
      return Ref::own(Value::unknown("internal error: " + b.list->name + " changed length"));
    }
    return Ref::to(list->items()[b.index]);
  }

  Ref eval_member(const Node& n) {
    // Untraced only: a trace lists the facts read, and the shortcut reads fewer.
    if (n.element_field && trace_ == nullptr) {
      if (const Value* v = root_.element_field(n.kids[0]->kids[0]->fact, n.element_index, n.field_fact)) return Ref::to(*v);
    }
    if (n.kids[0]->kind == NodeKind::BoundVar) {
      const Binding& b = env_.at(n.kids[0]->slot);
      if (b.value == nullptr) {
        if (const Value* v = root_.element_field(b.list->fact, b.index, n.field_fact)) return Ref::to(*v);
      }
    }
    Ref base = eval(*n.kids[0]);
    const Value& b = base.get();
    if (b.is_unknown()) return base;
    if (b.kind() != Value::Kind::Record) {
      return Ref::own(type_error(n.kids[0]->text + " is " + type_name(b) + ", it has no field '" + n.name + "'"));
    }
    const Value* field = b.field(n.name);
    if (!field) return Ref::own(Value::unknown(n.kids[0]->text + " has no field '" + n.name + "'"));
    return base.part(*field);
  }

  Ref eval_index(const Node& n) {
    Ref base = eval(*n.kids[0]);
    Ref index = eval(*n.kids[1]);
    const Value& b = base.get();
    const Value& i = index.get();
    if (b.is_unknown()) return base;
    if (i.is_unknown()) return index;
    bool is_list = b.kind() == Value::Kind::List;
    if (!is_list && b.kind() != Value::Kind::String) {
      return Ref::own(type_error("cannot index " + n.kids[0]->text + " (" + type_name(b) + ")"));
    }
    if (i.kind() != Value::Kind::Int) return Ref::own(type_error(std::string("index must be an int, got ") + type_name(i)));
    int64_t size = static_cast<int64_t>(is_list ? b.items().size() : b.as_string().size());
    int64_t k = i.as_int() < 0 ? i.as_int() + size : i.as_int();
    if (k < 0 || k >= size) {
      return Ref::own(Value::unknown("index " + std::to_string(i.as_int()) + " out of range for " +
                                     n.kids[0]->text + " (length " + std::to_string(size) + ")"));
    }
    if (!is_list) return Ref::own(Value::of_string(b.as_string().substr(static_cast<size_t>(k), 1)));
    return base.part(b.items()[static_cast<size_t>(k)]);
  }

  // Python slice bound: negative counts from the end, then clamp to [0, size].
  static int64_t slice_bound(int64_t v, int64_t size) {
    if (v < 0) v = std::max<int64_t>(v + size, 0);
    return std::min(v, size);
  }

  Ref eval_slice(const Node& n) {
    Ref base = eval(*n.kids[0]);
    const Value& b = base.get();
    int64_t bounds[2] = {0, 0};
    for (int side = 0; side < 2; ++side) {
      const Node* bound = n.kids[1 + side].get();
      if (!bound) continue;
      Ref r = eval(*bound);
      if (r.get().is_unknown()) return r;
      if (r.get().kind() != Value::Kind::Int) {
        return Ref::own(type_error(std::string("slice bound must be an int, got ") + type_name(r.get())));
      }
      bounds[side] = r.get().as_int();
    }
    if (b.is_unknown()) return base;
    bool is_list = b.kind() == Value::Kind::List;
    if (!is_list && b.kind() != Value::Kind::String) {
      return Ref::own(type_error("cannot slice " + n.kids[0]->text + " (" + type_name(b) + ")"));
    }
    int64_t size = static_cast<int64_t>(is_list ? b.items().size() : b.as_string().size());
    int64_t lo = n.kids[1] ? slice_bound(bounds[0], size) : 0;
    int64_t hi = n.kids[2] ? slice_bound(bounds[1], size) : size;
    hi = std::max(lo, hi);
    if (!is_list) return Ref::own(Value::of_string(b.as_string().substr(static_cast<size_t>(lo), static_cast<size_t>(hi - lo))));
    return Ref::own(Value::of_list(std::vector<Value>(b.items().begin() + lo, b.items().begin() + hi)));
  }

  Value eval_list_literal(const Node& n) {
    std::vector<Value> items;
    items.reserve(n.kids.size());
    for (const NodePtr& kid : n.kids) items.push_back(eval(*kid).take());
    return Value::of_list(std::move(items));
  }

  Value eval_neg(const Node& n) {
    Ref r = eval(*n.kids[0]);
    const Value& v = r.get();
    if (v.is_unknown()) return v;
    if (v.kind() == Value::Kind::Int) return v.as_int() == kInt64Min ? overflow() : Value::of_int(-v.as_int());
    if (v.kind() == Value::Kind::Float) return Value::of_float(-v.as_number());
    return type_error(std::string("cannot negate ") + type_name(v));
  }

  Value eval_not(const Node& n) {
    Ref r = eval(*n.kids[0]);
    const Value& v = r.get();
    if (v.kind() == Value::Kind::Bool) return Value::of_bool(!v.as_bool());
    if (v.is_unknown()) return v;
    return type_error(std::string("'not' needs a bool, got ") + type_name(v));
  }

  // Short-circuits on a dominant operand, like Python; unevaluated operands
  // do not appear in the trace.
  Value eval_logical(const Node& n, bool dominant, const char* context) {
    KleeneFold fold(dominant);
    for (const NodePtr& kid : n.kids) {
      if (fold.add(eval(*kid).get(), context)) break;
    }
    return fold.result();
  }

  // Arithmetic does not short-circuit: every fact is still evaluated (and
  // traced) even once the result is known to be unknown.
  Value eval_arith(const Node& n) {
    Value acc = eval(*n.kids[0]).take();
    for (size_t i = 1; i < n.kids.size(); ++i) {
      Ref right = eval(*n.kids[i]);
      acc = arith(n.ops[i - 1], acc, right.get());
    }
    return acc;
  }

  // `a < b < c` == `a < b and b < c`, with b evaluated once.
  Value eval_compare(const Node& n) {
    KleeneFold fold(false);
    Ref left = eval(*n.kids[0]);
    for (size_t i = 1; i < n.kids.size(); ++i) {
      Ref right = eval(*n.kids[i]);
      if (fold.add(compare(n.ops[i - 1], left.get(), right.get()), "comparison")) break;
      left = std::move(right);
    }
    return fold.result();
  }

  Value eval_in_range(const Node& n) {
    Ref x = eval(*n.kids[0]);
    Ref lo = eval(*n.kids[1]);
    Ref hi = eval(*n.kids[2]);
    for (const Ref* r : {&x, &lo, &hi}) {
      const Value& v = r->get();
      if (v.is_unknown()) return v;
      if (!v.is_number()) return type_error(std::string("range membership needs numbers, got ") + type_name(v));
      if (is_nan(v)) return Value::unknown("comparison with NaN");
    }
    bool inside = compare_numbers(lo.get(), x.get()) <= 0 && compare_numbers(x.get(), hi.get()) <= 0;
    return Value::of_bool(inside != n.negated);
  }

  // `x in {a, b}`: true if any element equals x, even if others are unknown.
  Value eval_in_set(const Node& n) {
    Ref x = eval(*n.kids[0]);
    KleeneFold fold(true);
    for (size_t i = 1; i < n.kids.size(); ++i) {
      if (fold.add(tri_equals(x.get(), eval(*n.kids[i]).get()), "'in'")) break;
    }
    return n.negated ? negate(fold.result()) : fold.result();
  }

  Value eval_in_list(const Node& n) {
    Ref x = eval(*n.kids[0]);
    Ref list = eval(*n.kids[1]);
    const Value& l = list.get();
    if (l.is_unknown()) return x.get().is_unknown() ? x.get() : l;
    if (l.kind() != Value::Kind::List) return type_error(std::string("'in' needs a list, got ") + type_name(l));
    KleeneFold fold(true);
    for (const Value& item : l.items()) {
      if (fold.add(tri_equals(x.get(), item), "'in'")) break;
    }
    return n.negated ? negate(fold.result()) : fold.result();
  }

  // ---- functions ----

  Value eval_call(const Node& n) {
    const char* name = function_name(n.func);
    switch (n.func) {
      case Func::Len:
        if (n.kids[0]->kind == NodeKind::RootIdent && trace_ == nullptr) {
          if (const long size = root_.list_size(n.kids[0]->fact); size >= 0) return Value::of_int(size);
        }
        return fn_len(eval(*n.kids[0]).get());
      case Func::Prod:
      case Func::Sum: return fn_fold(n.func, eval(*n.kids[0]).get());
      case Func::Min:
      case Func::Max: return fn_extreme(n);
      case Func::Abs: return fn_abs(eval(*n.kids[0]).get());
      case Func::Known: return Value::of_bool(fully_known(eval(*n.kids[0]).get()));
      default: break;
    }
    // The remaining functions take two ints.
    Ref a = eval(*n.kids[0]);
    Ref b = eval(*n.kids[1]);
    for (const Ref* r : {&a, &b}) {
      if (r->get().is_unknown()) return r->get();
      if (r->get().kind() != Value::Kind::Int) {
        return type_error(std::string(name) + "() needs ints, got " + type_name(r->get()));
      }
    }
    int64_t x = a.get().as_int(), y = b.get().as_int();
    if (n.func == Func::Range) return fn_range(x, y);
    if (n.func == Func::CeilDiv) return fn_ceil_div(x, y);
    return fn_align_up(x, y);
  }

  static Value fn_len(const Value& v) {
    if (v.is_unknown()) return v;
    if (v.kind() == Value::Kind::List) return Value::of_int(static_cast<int64_t>(v.items().size()));
    if (v.kind() == Value::Kind::String) return Value::of_int(static_cast<int64_t>(v.as_string().size()));
    return type_error(std::string("len() needs a list, got ") + type_name(v));
  }

  // prod / sum with checked integer arithmetic; empty lists give 1 / 0.
  static Value fn_fold(Func func, const Value& list) {
    const char* name = function_name(func);
    if (list.is_unknown()) return list;
    if (list.kind() != Value::Kind::List) return type_error(std::string(name) + "() needs a list, got " + type_name(list));
    Op op = func == Func::Prod ? Op::Mul : Op::Add;
    Value acc = Value::of_int(func == Func::Prod ? 1 : 0);
    for (const Value& item : list.items()) {
      if (item.is_unknown()) return item;
      if (!item.is_number()) return type_error(std::string(name) + "() needs numbers, got " + type_name(item));
      acc = arith(op, acc, item);
      if (acc.is_unknown()) return acc;
    }
    return acc;
  }

  // min(list) or min(a, b, ...); likewise max.
  Value fn_extreme(const Node& n) {
    bool is_max = n.func == Func::Max;
    std::string name = function_name(n.func);
    std::vector<Value> args;
    Ref single;
    const std::vector<Value>* candidates = &args;
    if (n.kids.size() == 1) {
      single = eval(*n.kids[0]);
      const Value& l = single.get();
      if (l.is_unknown()) return l;
      if (l.kind() != Value::Kind::List) return type_error(name + "() needs a list, got " + type_name(l));
      candidates = &l.items();
    } else {
      for (const NodePtr& kid : n.kids) args.push_back(eval(*kid).take());
    }
    if (candidates->empty()) return Value::unknown(name + "() of an empty list");
    const Value* best = nullptr;
    for (const Value& v : *candidates) {
      if (v.is_unknown()) return v;
      if (!v.is_number()) return type_error(name + "() needs numbers, got " + type_name(v));
      if (is_nan(v)) return Value::unknown("comparison with NaN");
      if (!best || (is_max ? compare_numbers(v, *best) > 0 : compare_numbers(v, *best) < 0)) best = &v;
    }
    return *best;
  }

  static Value fn_abs(const Value& v) {
    if (v.is_unknown()) return v;
    if (v.kind() == Value::Kind::Int) {
      if (v.as_int() == kInt64Min) return overflow();
      return Value::of_int(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.kind() == Value::Kind::Float) return Value::of_float(std::fabs(v.as_number()));
    return type_error(std::string("abs() needs a number, got ") + type_name(v));
  }

  static Value fn_range(int64_t a, int64_t b) {
    if (b <= a) return Value::of_list({});
    int64_t length = 0;
    if (__builtin_sub_overflow(b, a, &length) || length > kMaxRangeLength) {
      return Value::unknown("range() would have more than " + std::to_string(kMaxRangeLength) + " elements");
    }
    std::vector<Value> items;
    items.reserve(static_cast<size_t>(length));
    for (int64_t i = a; i < b; ++i) items.push_back(Value::of_int(i));
    return Value::of_list(std::move(items));
  }

  static Value fn_ceil_div(int64_t a, int64_t b) {
    if (b == 0) return division_by_zero();
    if (a == kInt64Min && b == -1) return overflow();
    int64_t q = a / b;
    if (a % b != 0 && ((a % b > 0) == (b > 0))) ++q;
    return Value::of_int(q);
  }

  static Value fn_align_up(int64_t x, int64_t n) {
    if (n <= 0) return Value::unknown("align_up() needs a positive alignment, got " + std::to_string(n));
    Value blocks = fn_ceil_div(x, n);
    int64_t r = 0;
    if (__builtin_mul_overflow(blocks.as_int(), n, &r)) return overflow();
    return Value::of_int(r);
  }

  // What a quantifier variable is bound to: an element in hand, or (lazy)
  // element `index` of a root list whose source answers element by element.
  struct Binding {
    const Value* value = nullptr;
    const Node* list = nullptr;  // RootIdent
    size_t index = 0;
  };

  // Untraced, `all(t in input + output: ...)` walks the lists by index, so
  // `t.rank` reads one field and no element record is built. A trace needs
  // the lists themselves, so it takes the general path.
  bool lazy_bindings(const Node& list, std::vector<Binding>& out) const {
    if (trace_ != nullptr) return false;
    std::vector<const Node*> parts;
    if (list.kind == NodeKind::RootIdent) {
      parts.push_back(&list);
    } else if (list.kind == NodeKind::Arith &&
               std::all_of(list.ops.begin(), list.ops.end(), [](Op op) { return op == Op::Add; })) {
      for (const NodePtr& kid : list.kids) {
        if (kid->kind != NodeKind::RootIdent) return false;
        parts.push_back(kid.get());
      }
    } else {
      return false;
    }
    std::vector<long> sizes;
    for (const Node* part : parts) {
      const long size = root_.list_size(part->fact);
      if (size < 0) return false;
      sizes.push_back(size);
    }
    for (size_t p = 0; p < parts.size(); ++p) {
      for (long k = 0; k < sizes[p]; ++k) out.push_back({nullptr, parts[p], static_cast<size_t>(k)});
    }
    return true;
  }

  // all / any / count / map over a list, binding the variable to each element.
  Value eval_quantifier(const Node& n) {
    std::string name = function_name(n.func);
    std::vector<Binding> items;
    Ref list = Ref::own(Value());
    if (!lazy_bindings(*n.kids[0], items)) {
      list = eval(*n.kids[0]);
      const Value& l = list.get();
      if (l.is_unknown()) return l;
      if (l.kind() != Value::Kind::List) return type_error(name + "() needs a list, got " + type_name(l));
      items.reserve(l.items().size());
      for (const Value& item : l.items()) items.push_back({&item, nullptr, 0});
    }
    std::string context = name + "() condition";
    if (n.func == Func::Count) return count_true(n, items, context);
    if (n.func == Func::Map) return map_items(n, items);
    KleeneFold fold(n.func == Func::Any);  // all: false dominates; any: true does
    for (const Binding& item : items) {
      if (fold.add(eval_bound(n, item).get(), context.c_str())) break;
    }
    return fold.result();
  }

  // map(v in LIST: expr): the list of expr for each element; unknown
  // results stay as unknown elements (prod/sum then report them).
  Value map_items(const Node& n, const std::vector<Binding>& items) {
    std::vector<Value> out;
    out.reserve(items.size());
    for (const Binding& item : items) out.push_back(eval_bound(n, item).take());
    return Value::of_list(std::move(out));
  }

  Value count_true(const Node& n, const std::vector<Binding>& items, const std::string& context) {
    int64_t count = 0;
    for (const Binding& item : items) {
      Ref r = eval_bound(n, item);
      const Value& v = r.get();
      if (v.is_unknown()) return v;
      if (v.kind() != Value::Kind::Bool) return type_error(context + " needs a bool, got " + type_name(v));
      if (v.as_bool()) ++count;
    }
    return Value::of_int(count);
  }

  // The body's value is copied out before the binding is popped, because it
  // may borrow from the bound element.
  Ref eval_bound(const Node& quantifier, const Binding& item) {
    env_.push_back(item);
    Value v = eval(*quantifier.kids[1]).take();
    env_.pop_back();
    return Ref::own(std::move(v));
  }

  const FactSource& root_;
  Trace* trace_;
  std::vector<Binding> env_;  // quantifier bindings by slot
};

// ---- template scanning ----

// Finds the '}' closing a placeholder whose body starts at `pos`, skipping
// quoted strings and nested set braces. Returns npos if there is none.
size_t find_placeholder_end(const std::string& text, size_t pos) {
  int depth = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\'' || c == '"') {
      for (++i; i < text.size() && text[i] != c; ++i) {
        if (text[i] == '\\') ++i;
      }
      if (i >= text.size()) return std::string::npos;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (depth == 0) return i;
      --depth;
    }
  }
  return std::string::npos;
}

}  // namespace

// ===========================================================================
// 6. Public API
// ===========================================================================

class Expr {
 public:
  std::string source;
  NodePtr root;
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

ExprPtr parse_expr(const std::string& text, ExprError* error) {
  try {
    Parser parser(text, Lexer(text).run());
    auto expr = std::make_shared<Expr>();
    expr->root = parser.parse_all();
    expr->source = text;
    expr->roots = parser.root_names();
    return expr;
  } catch (const ParseFailure& f) {
    if (error) *error = {f.offset, f.message};
  } catch (const std::exception& e) {
    if (error) *error = {0, std::string("internal error: ") + e.what()};
  }
  return nullptr;
}

const std::string& expr_text(const Expr& expr) { return expr.source; }

std::vector<std::string> free_identifiers(const Expr& expr) { return expr.roots; }

FactId intern_fact(const std::string& name) {
  // Only parsing interns (rule load), never evaluation, so one lock is cheap.
  static std::mutex mutex;
  static std::unordered_map<std::string, FactId> ids;
  std::lock_guard<std::mutex> lock(mutex);
  return ids.emplace(name, static_cast<FactId>(ids.size())).first->second;
}

Value eval(const Expr& expr, const Value& root, Trace* trace) { return eval(expr, RecordFactSource(root), trace); }

Value eval(const Expr& expr, const FactSource& root, Trace* trace) {
  try {
    return Evaluator(root, trace).eval(*expr.root).take();
  } catch (const std::exception& e) {  // e.g. std::bad_alloc; never expected
    return Value::unknown(std::string("internal error: ") + e.what());
  }
}

TemplatePtr parse_template(const std::string& text, ExprError* error) {
  auto fail = [&](size_t offset, std::string message) -> TemplatePtr {
    if (error) *error = {offset, std::move(message)};
    return nullptr;
  };
  try {
    auto tmpl = std::make_shared<Template>();
    tmpl->source = text;
    std::string literal;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
        literal += c;  // `{{` or `}}`
        ++i;
        continue;
      }
      if (c == '}') return fail(i, "unmatched '}' (write '}}' for a literal brace)");
      if (c != '{') {
        literal += c;
        continue;
      }
      size_t end = find_placeholder_end(text, i + 1);
      if (end == std::string::npos) return fail(i, "unterminated placeholder '{'");
      ExprError inner;
      ExprPtr expr = parse_expr(text.substr(i + 1, end - i - 1), &inner);
      if (!expr) {
        if (inner.message == "empty expression") return fail(i, "empty placeholder '{}'");
        return fail(i + 1 + inner.offset, inner.message);
      }
      if (!literal.empty()) tmpl->pieces.push_back({std::move(literal), nullptr});
      literal.clear();
      tmpl->pieces.push_back({{}, std::move(expr)});
      i = end;
    }
    if (!literal.empty()) tmpl->pieces.push_back({std::move(literal), nullptr});
    return tmpl;
  } catch (const std::exception& e) {
    return fail(0, std::string("internal error: ") + e.what());
  }
}

std::string render(const Template& tmpl, const Value& root) { return render(tmpl, RecordFactSource(root)); }

std::string render(const Template& tmpl, const FactSource& root) {
  try {
    std::string out;
    for (const Template::Piece& piece : tmpl.pieces) {
      out += piece.expr ? eval(*piece.expr, root).to_string() : piece.literal;
    }
    return out;
  } catch (const std::exception&) {  // out of memory; keep the raw text
    return tmpl.source;
  }
}

std::vector<std::string> free_identifiers(const Template& tmpl) {
  std::set<std::string> names;
  for (const Template::Piece& piece : tmpl.pieces) {
    if (piece.expr) names.insert(piece.expr->roots.begin(), piece.expr->roots.end());
  }
  return {names.begin(), names.end()};
}

}  // namespace bpulint
