// Constraint expressions, front half: lexer, recursive-descent parser, canonical
// printer and the public parse_expr / parse_template (text -> AST of expr_ast.h).
// The evaluator is in expr_eval.cpp; the API in include/bpulint/rules/expr.h.
#include "bpulint/rules/expr.h"

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

#include "expr_ast.h"

namespace bpulint {
using namespace expr_detail;  // the AST, expr_ast.h
namespace {

// ===========================================================================
// Limits and small helpers
// ===========================================================================

// Bounds both parser recursion and AST height, so hostile or machine-made
// rules fail with an error instead of overflowing the stack (in the parser,
// the evaluator, or the recursive destructor of the tree).
constexpr int kMaxDepth = 200;

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
// Lexer
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
// Function table and canonical text
// ===========================================================================

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

}  // namespace

const char* expr_detail::function_name(Func func) {
  for (const FuncInfo& f : kFunctions) {
    if (f.func == func) return f.name;
  }
  return "?";
}

const char* expr_detail::op_symbol(Op op) {
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

namespace {

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
// Parser
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
// Public API
// ===========================================================================

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

std::vector<std::string> free_identifiers(const Template& tmpl) {
  std::set<std::string> names;
  for (const Template::Piece& piece : tmpl.pieces) {
    if (piece.expr) names.insert(piece.expr->roots.begin(), piece.expr->roots.end());
  }
  return {names.begin(), names.end()};
}

}  // namespace bpulint
