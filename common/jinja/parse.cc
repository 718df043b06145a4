#include "common/jinja/parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <initializer_list>
#include <set>

#include "common/jinja/lexer.h"

namespace kvmesh::jinja::internal {

bool IsKnownFilter(std::string_view name);  // filters.cc
bool IsKnownTest(std::string_view name);

namespace {

class Parser {
 public:
  explicit Parser(std::vector<Segment> segments) : segs_(std::move(segments)) {}

  Body ParseAll() {
    Body body = ParseBody({});
    if (seg_ < segs_.size()) {
      throw ParseError(segs_[seg_].line, "unexpected '" + segs_[seg_].tokens[0].text + "'");
    }
    return body;
  }

 private:
  // --- token cursor within the current tag ---
  const Token& Cur() const { return (*toks_)[tok_]; }
  const Token& Peek(size_t k = 1) const { return (*toks_)[std::min(tok_ + k, toks_->size() - 1)]; }
  bool IsOp(const char* op) const { return Cur().type == Token::Type::kOp && Cur().text == op; }
  bool IsName(const char* name) const {
    return Cur().type == Token::Type::kName && Cur().text == name;
  }
  void Next() {
    if (tok_ + 1 < toks_->size()) ++tok_;
  }
  [[noreturn]] void Fail(const std::string& what) const { throw ParseError(Cur().line, what); }
  void Expect(const char* op) {
    if (!IsOp(op)) Fail(std::string("expected '") + op + "', got '" + Describe() + "'");
    Next();
  }
  std::string Describe() const {
    return Cur().type == Token::Type::kEnd ? "end of tag" : Cur().text;
  }
  std::string ExpectName() {
    if (Cur().type != Token::Type::kName) Fail("expected a name, got '" + Describe() + "'");
    std::string n = Cur().text;
    Next();
    return n;
  }
  void ExpectEnd() {
    if (Cur().type != Token::Type::kEnd) Fail("unexpected '" + Describe() + "' at end of tag");
  }

  ExprPtr Make(Expr::Kind kind) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = Cur().line;
    return e;
  }

  // --- statements ---
  Body ParseBody(const std::set<std::string>& ends) {
    Body body;
    while (seg_ < segs_.size()) {
      Segment& s = segs_[seg_];
      if (s.kind == Segment::Kind::kText) {
        auto st = std::make_unique<Stmt>();
        st->kind = Stmt::Kind::kText;
        st->text = s.text;
        st->line = s.line;
        body.push_back(std::move(st));
        ++seg_;
        continue;
      }
      toks_ = &s.tokens;
      tok_ = 0;
      if (s.kind == Segment::Kind::kVar) {
        auto st = std::make_unique<Stmt>();
        st->kind = Stmt::Kind::kOutput;
        st->line = s.line;
        st->expr = ParseTupleOrExpr();
        ExpectEnd();
        body.push_back(std::move(st));
        ++seg_;
        continue;
      }
      if (Cur().type != Token::Type::kName) Fail("expected a tag name");
      const std::string tag = Cur().text;
      if (ends.count(tag)) return body;
      if (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else") {
        Fail("unexpected '" + tag + "'");
      }
      Next();
      ++seg_;
      body.push_back(ParseStatement(tag, s.line));
    }
    if (!ends.empty()) {
      throw ParseError(segs_.empty() ? 0 : segs_.back().line,
                       "missing '" + *ends.rbegin() + "' at end of template");
    }
    return body;
  }

  // Consumes the tag that closed a body ({% endif %} ...): returns its name.
  std::string TakeEndTag() {
    Segment& s = segs_[seg_];
    toks_ = &s.tokens;
    tok_ = 0;
    std::string name = Cur().text;
    Next();
    return name;
  }
  void FinishTag() {
    ExpectEnd();
    ++seg_;
  }

  StmtPtr ParseStatement(const std::string& tag, int line) {
    Nest nest(*this);
    auto st = std::make_unique<Stmt>();
    st->line = line;
    if (tag == "if") {
      Soft soft(*this);
      st->kind = Stmt::Kind::kIf;
      st->conditions.push_back(ParseExpr());
      ExpectEnd();
      while (true) {
        st->bodies.push_back(ParseBody({"elif", "else", "endif"}));
        const std::string end = TakeEndTag();
        if (end == "elif") {
          st->conditions.push_back(ParseExpr());
          FinishTag();
        } else if (end == "else") {
          FinishTag();
          st->bodies.push_back(ParseBody({"endif"}));
          TakeEndTag();
          FinishTag();
          break;
        } else {
          FinishTag();
          break;
        }
      }
      return st;
    }
    if (tag == "for") {
      st->kind = Stmt::Kind::kFor;
      st->targets.push_back(ExpectName());
      while (IsOp(",")) {
        Next();
        st->targets.push_back(ExpectName());
      }
      if (!IsName("in")) Fail("expected 'in' in for");
      Next();
      st->expr = ParseExpr(/*with_cond=*/false);
      if (IsName("if")) {
        Next();
        st->cond = ParseExpr();
      }
      if (IsName("recursive")) {
        st->recursive = true;
        Next();
      }
      ExpectEnd();
      st->body = ParseBody({"else", "endfor"});
      if (TakeEndTag() == "else") {
        FinishTag();
        st->else_body = ParseBody({"endfor"});
        TakeEndTag();
      }
      FinishTag();
      return st;
    }
    if (tag == "set") {
      st->targets.push_back(ExpectName());
      if (IsOp(".")) {
        Next();
        st->targets.push_back(ExpectName());
        st->attr_set = true;
      } else {
        while (IsOp(",")) {
          Next();
          st->targets.push_back(ExpectName());
        }
      }
      if (IsOp("=")) {
        Next();
        st->kind = Stmt::Kind::kSet;
        st->expr = ParseTupleOrExpr();
        ExpectEnd();
        return st;
      }
      st->kind = Stmt::Kind::kSetBlock;
      if (IsOp("|")) st->expr = ParseFilterChain();
      ExpectEnd();
      st->body = ParseBody({"endset"});
      TakeEndTag();
      FinishTag();
      return st;
    }
    if (tag == "macro") {
      st->kind = Stmt::Kind::kMacro;
      st->name = ExpectName();
      ParseParams(st.get());
      ExpectEnd();
      st->body = ParseBody({"endmacro"});
      TakeEndTag();
      if (Cur().type == Token::Type::kName) Next();  // {% endmacro name %}
      FinishTag();
      return st;
    }
    if (tag == "call") {
      st->kind = Stmt::Kind::kCallBlock;
      if (IsOp("(")) ParseParams(st.get());
      st->expr = ParseExpr();
      if (st->expr->kind != Expr::Kind::kCall) Fail("expected a call after {% call %}");
      ExpectEnd();
      st->body = ParseBody({"endcall"});
      TakeEndTag();
      FinishTag();
      return st;
    }
    if (tag == "filter") {
      st->kind = Stmt::Kind::kFilterBlock;
      st->expr = ParseFilterChain(/*leading_pipe=*/false);
      ExpectEnd();
      st->body = ParseBody({"endfilter"});
      TakeEndTag();
      FinishTag();
      return st;
    }
    if (tag == "generation") {
      st->kind = Stmt::Kind::kScope;
      ExpectEnd();
      st->body = ParseBody({"endgeneration"});
      TakeEndTag();
      FinishTag();
      return st;
    }
    if (tag == "break" || tag == "continue") {
      st->kind = tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      ExpectEnd();
      return st;
    }
    if (tag == "include" || tag == "import" || tag == "from" || tag == "extends" ||
        tag == "block") {
      throw ParseError(line, "'" + tag + "' is not supported (templates run without a loader)");
    }
    throw ParseError(line, "unknown tag '" + tag + "'");
  }

  void ParseParams(Stmt* st) {
    Expect("(");
    while (!IsOp(")")) {
      st->params.push_back(ExpectName());
      if (IsOp("=")) {
        Next();
        st->defaults.push_back(ParseExpr());
      } else {
        st->defaults.push_back(nullptr);
      }
      if (!IsOp(",")) break;
      Next();
    }
    Expect(")");
  }

  // `| a(x) | b` (or `a | b` after {% filter %}): a chain of filters applied
  // to a null operand, which the interpreter fills in.
  ExprPtr ParseFilterChain(bool leading_pipe = true) {
    ExprPtr node;
    bool first = true;
    while ((first && !leading_pipe) || IsOp("|")) {
      if (!(first && !leading_pipe)) Next();
      first = false;
      node = ParseFilter(std::move(node));
    }
    return node;
  }

  // --- expressions ---
  ExprPtr ParseTupleOrExpr() {
    ExprPtr e = ParseExpr();
    if (!IsOp(",")) return e;
    auto t = Make(Expr::Kind::kTuple);
    t->args.push_back(std::move(e));
    while (IsOp(",")) {
      Next();
      if (Cur().type == Token::Type::kEnd) break;
      t->args.push_back(ParseExpr());
    }
    return t;
  }

  ExprPtr ParseExpr(bool with_cond = true) {
    ExprPtr e = ParseOr();
    if (!with_cond) return e;
    while (IsName("if")) {
      Next();
      Soft soft(*this);
      auto c = Make(Expr::Kind::kCond);
      c->args.push_back(ParseOr());
      c->args.push_back(std::move(e));
      if (IsName("else")) {
        Next();
        c->args.push_back(ParseExpr());
      } else {
        c->args.push_back(nullptr);
      }
      e = std::move(c);
    }
    return e;
  }

  ExprPtr Binary(Expr::Kind kind, ExprPtr a, ExprPtr b, const std::string& op = "") {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = a->line;
    e->name = op;
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr ParseOr() {
    ExprPtr e = ParseAnd();
    while (IsName("or")) {
      Next();
      e = Binary(Expr::Kind::kOr, std::move(e), ParseAnd());
    }
    return e;
  }

  ExprPtr ParseAnd() {
    ExprPtr e = ParseNot();
    while (IsName("and")) {
      Next();
      e = Binary(Expr::Kind::kAnd, std::move(e), ParseNot());
    }
    return e;
  }

  ExprPtr ParseNot() {
    if (IsName("not")) {
      auto e = Make(Expr::Kind::kNot);
      Next();
      e->args.push_back(ParseNot());
      return e;
    }
    return ParseCompare();
  }

  ExprPtr ParseCompare() {
    ExprPtr first = ParseMath1();
    std::vector<std::string> ops;
    std::vector<ExprPtr> operands;
    while (true) {
      std::string op;
      if (Cur().type == Token::Type::kOp &&
          (Cur().text == "==" || Cur().text == "!=" || Cur().text == "<" || Cur().text == ">" ||
           Cur().text == "<=" || Cur().text == ">=")) {
        op = Cur().text;
        Next();
      } else if (IsName("in")) {
        op = "in";
        Next();
      } else if (IsName("not") && Peek().type == Token::Type::kName && Peek().text == "in") {
        op = "notin";
        Next();
        Next();
      } else {
        break;
      }
      ops.push_back(op);
      operands.push_back(ParseMath1());
    }
    if (ops.empty()) return first;
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::kCompare;
    e->line = first->line;
    e->args.push_back(std::move(first));
    for (auto& o : operands) e->args.push_back(std::move(o));
    e->ops = std::move(ops);
    return e;
  }

  // One left-associative level of binary operators over `next`.
  ExprPtr LeftAssoc(ExprPtr (Parser::*next)(), std::initializer_list<const char*> ops) {
    ExprPtr e = (this->*next)();
    while (true) {
      const char* op = nullptr;
      for (const char* o : ops) {
        if (IsOp(o)) op = o;
      }
      if (op == nullptr) return e;
      Next();
      e = Binary(Expr::Kind::kBinary, std::move(e), (this->*next)(), op);
    }
  }
  // Jinja's precedence, loosest first: + -, then ~, then * / // %, then **.
  ExprPtr ParseMath1() { return LeftAssoc(&Parser::ParseConcat, {"+", "-"}); }
  ExprPtr ParseConcat() { return LeftAssoc(&Parser::ParseMath2, {"~"}); }
  ExprPtr ParseMath2() { return LeftAssoc(&Parser::ParsePow, {"*", "/", "//", "%"}); }
  ExprPtr ParsePow() { return LeftAssoc(&Parser::ParseUnaryFiltered, {"**"}); }
  ExprPtr ParseUnaryFiltered() { return ParseUnary(true); }

  // Inside an if statement or an inline if, which may guard unknown filters.
  struct Soft {
    Parser& p;
    explicit Soft(Parser& parser) : p(parser) { ++p.soft_; }
    ~Soft() { --p.soft_; }
  };

  // Templates nest only so deep: a hostile one must not overflow the stack.
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser) : p(parser) {
      if (++p.nesting_ > kMaxNesting)
        p.Fail("template nests deeper than " + std::to_string(kMaxNesting));
    }
    ~Nest() { --p.nesting_; }
  };
  static constexpr int kMaxNesting = 128;

  ExprPtr ParseUnary(bool with_filter = true) {
    Nest nest(*this);
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      node = Make(IsOp("-") ? Expr::Kind::kNeg : Expr::Kind::kPos);
      Next();
      node->args.push_back(ParseUnary(false));
    } else {
      node = ParsePrimary();
    }
    node = ParsePostfix(std::move(node));
    if (with_filter) node = ParseFilterExpr(std::move(node));
    return node;
  }

  ExprPtr ParsePrimary() {
    const Token& t = Cur();
    if (t.type == Token::Type::kName) {
      auto e = Make(Expr::Kind::kLiteral);
      if (t.text == "true" || t.text == "True") {
        e->value = Value::Bool(true);
      } else if (t.text == "false" || t.text == "False") {
        e->value = Value::Bool(false);
      } else if (t.text == "none" || t.text == "None") {
        e->value = Value::None();
      } else {
        e->kind = Expr::Kind::kName;
        e->name = t.text;
      }
      Next();
      return e;
    }
    if (t.type == Token::Type::kString) {
      auto e = Make(Expr::Kind::kLiteral);
      std::string s;
      while (Cur().type == Token::Type::kString) {
        s += Cur().text;
        Next();
      }
      e->value = Value::Str(std::move(s));
      return e;
    }
    if (t.type == Token::Type::kInt || t.type == Token::Type::kFloat) {
      auto e = Make(Expr::Kind::kLiteral);
      e->value = t.type == Token::Type::kInt ? Value::Int(t.i) : Value::Float(t.f);
      Next();
      return e;
    }
    if (IsOp("(")) {
      Next();
      if (IsOp(")")) {
        Next();
        return Make(Expr::Kind::kTuple);
      }
      ExprPtr e = ParseExpr();
      if (IsOp(",")) {
        auto tup = Make(Expr::Kind::kTuple);
        tup->args.push_back(std::move(e));
        while (IsOp(",")) {
          Next();
          if (IsOp(")")) break;
          tup->args.push_back(ParseExpr());
        }
        e = std::move(tup);
      }
      Expect(")");
      return e;
    }
    if (IsOp("[")) {
      auto e = Make(Expr::Kind::kList);
      Next();
      while (!IsOp("]")) {
        e->args.push_back(ParseExpr());
        if (!IsOp(",")) break;
        Next();
      }
      Expect("]");
      return e;
    }
    if (IsOp("{")) {
      auto e = Make(Expr::Kind::kDict);
      Next();
      while (!IsOp("}")) {
        e->args.push_back(ParseExpr());
        Expect(":");
        e->args.push_back(ParseExpr());
        if (!IsOp(",")) break;
        Next();
      }
      Expect("}");
      return e;
    }
    Fail("unexpected '" + Describe() + "'");
  }

  void ParseCallArgs(Expr* e) {
    Expect("(");
    while (!IsOp(")")) {
      if (Cur().type == Token::Type::kName && Peek().type == Token::Type::kOp &&
          Peek().text == "=") {
        std::string name = Cur().text;
        Next();
        Next();
        e->named.emplace_back(std::move(name), ParseExpr());
      } else {
        e->args.push_back(ParseExpr());
      }
      if (!IsOp(",")) break;
      Next();
    }
    Expect(")");
  }

  ExprPtr ParsePostfix(ExprPtr node) {
    while (true) {
      if (IsOp(".")) {
        Next();
        if (Cur().type == Token::Type::kInt) {
          auto e = Make(Expr::Kind::kItem);
          auto idx = Make(Expr::Kind::kLiteral);
          idx->value = Value::Int(Cur().i);
          Next();
          e->args.push_back(std::move(node));
          e->args.push_back(std::move(idx));
          node = std::move(e);
          continue;
        }
        auto e = Make(Expr::Kind::kAttr);
        e->name = ExpectName();
        e->args.push_back(std::move(node));
        node = std::move(e);
      } else if (IsOp("[")) {
        Next();
        ExprPtr parts[3];
        int colons = 0;
        while (!IsOp("]")) {
          if (IsOp(":")) {
            if (++colons > 2) Fail("bad slice");
            Next();
            continue;
          }
          parts[colons] = ParseExpr();
        }
        Expect("]");
        if (colons == 0) {
          if (!parts[0]) Fail("empty subscript");
          auto e = Make(Expr::Kind::kItem);
          e->args.push_back(std::move(node));
          e->args.push_back(std::move(parts[0]));
          node = std::move(e);
        } else {
          auto e = Make(Expr::Kind::kSlice);
          e->args.push_back(std::move(node));
          for (auto& p : parts) e->args.push_back(std::move(p));
          node = std::move(e);
        }
      } else if (IsOp("(")) {
        auto e = Make(Expr::Kind::kCall);
        e->args.push_back(std::move(node));
        ParseCallArgs(e.get());
        node = std::move(e);
      } else {
        return node;
      }
    }
  }

  ExprPtr ParseFilter(ExprPtr operand) {
    auto e = Make(Expr::Kind::kFilter);
    e->name = ExpectName();
    while (IsOp(".")) {  // dotted filter names
      Next();
      e->name += "." + ExpectName();
    }
    const bool known = IsKnownFilter(e->name);
    // As in Jinja, an unknown filter is an error when the template is
    // parsed, unless it sits inside an if, which may guard it.
    if (!known && soft_ == 0) Fail("no filter named '" + e->name + "'");
    e->args.push_back(std::move(operand));
    if (IsOp("(")) ParseCallArgs(e.get());
    if (!known) {
      e->kind = Expr::Kind::kUnknown;
      e->name = "no filter named '" + e->name + "'";
    }
    return e;
  }

  ExprPtr ParseFilterExpr(ExprPtr node) {
    while (true) {
      if (IsOp("|")) {
        Next();
        node = ParseFilter(std::move(node));
      } else if (IsName("is")) {
        Next();
        auto e = Make(Expr::Kind::kTest);
        if (IsName("not")) {
          e->negated = true;
          Next();
        }
        e->name = ExpectName();
        const bool known = IsKnownTest(e->name);
        if (!known && soft_ == 0) Fail("no test named '" + e->name + "'");
        if (!known) {
          e->kind = Expr::Kind::kUnknown;
          e->name = "no test named '" + e->name + "'";
        }
        e->args.push_back(std::move(node));
        if (IsOp("(")) {
          ParseCallArgs(e.get());
        } else if ((Cur().type == Token::Type::kName && !IsName("else") && !IsName("or") &&
                    !IsName("and") && !IsName("if") && !IsName("is") && !IsName("in") &&
                    !IsName("not")) ||
                   Cur().type == Token::Type::kString || Cur().type == Token::Type::kInt ||
                   Cur().type == Token::Type::kFloat || IsOp("[") || IsOp("{")) {
          e->args.push_back(ParsePostfix(ParsePrimary()));
        }
        node = std::move(e);
      } else if (IsOp("(")) {
        auto e = Make(Expr::Kind::kCall);
        e->args.push_back(std::move(node));
        ParseCallArgs(e.get());
        node = std::move(e);
      } else {
        return node;
      }
    }
  }

  std::vector<Segment> segs_;
  size_t seg_ = 0;
  int soft_ = 0;     // inside an if statement or an inline if
  int nesting_ = 0;  // statements and unary expressions being parsed
  std::vector<Token>* toks_ = nullptr;
  size_t tok_ = 0;
};

}  // namespace

StatusOr<std::shared_ptr<Body>> ParseTemplate(std::string_view source) {
  try {
    Parser parser(Lex(source));
    return std::make_shared<Body>(parser.ParseAll());
  } catch (const ParseError& e) {
    return InvalidArgumentError(std::string("template syntax error: ") + e.what());
  }
}

}  // namespace kvmesh::jinja::internal
