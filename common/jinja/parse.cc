#include "common/jinja/parse.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace kvmesh::jinja::internal {

bool IsKnownFilter(std::string_view name);  // render.cc
bool IsKnownTest(std::string_view name);

namespace {

struct ParseError : std::runtime_error {
  ParseError(int line, const std::string& what)
      : std::runtime_error("line " + std::to_string(line) + ": " + what) {}
};

struct Token {
  enum class Type { kName, kString, kInt, kFloat, kOp, kEnd };
  Type type = Type::kEnd;
  std::string text;
  int64_t i = 0;
  double f = 0;
  int line = 0;
};

struct Segment {
  enum class Kind { kText, kVar, kBlock };
  Kind kind;
  std::string text;
  std::vector<Token> tokens;  // ends with kEnd
  int line = 0;
};

bool IsSpaceTab(char c) { return c == ' ' || c == '\t'; }
bool IsWs(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Segment> Run() {
    size_t pos = 0;
    bool strip_next = false;
    while (pos <= src_.size()) {
      const size_t tag = FindTag(pos);
      const size_t chunk_start = pos;
      std::string text(src_.substr(pos, (tag == std::string_view::npos ? src_.size() : tag) - pos));
      if (strip_next) {
        size_t k = 0;
        while (k < text.size() && IsWs(text[k])) ++k;
        text.erase(0, k);
      }
      strip_next = false;
      if (tag == std::string_view::npos) {
        Emit(text, chunk_start);
        break;
      }
      const char kind = src_[tag + 1];
      const char mod = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (mod == '-') {
        size_t k = text.size();
        while (k > 0 && IsWs(text[k - 1])) --k;
        text.resize(k);
      } else if (kind != '{' && mod != '+') {
        // lstrip_blocks: spaces and tabs from the start of the line to a
        // block or comment tag go.
        const size_t nl = text.rfind('\n');
        const size_t from = nl == std::string::npos ? 0 : nl + 1;
        const bool line_start =
            nl != std::string::npos || chunk_start == 0 || src_[chunk_start - 1] == '\n';
        if (line_start && std::all_of(text.begin() + from, text.end(), IsSpaceTab)) {
          text.resize(from);
        }
      }
      Emit(text, chunk_start);
      size_t p = tag + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      if (kind == '#') {
        const size_t end = src_.find("#}", p);
        if (end == std::string_view::npos) throw ParseError(LineAt(tag), "unclosed comment");
        strip_next = end > p && src_[end - 1] == '-';
        pos = end + 2;
        if (!strip_next && pos < src_.size() && src_[pos] == '\n') ++pos;  // trim_blocks
        continue;
      }
      Segment seg;
      seg.kind = kind == '{' ? Segment::Kind::kVar : Segment::Kind::kBlock;
      seg.line = LineAt(tag);
      bool closed_strip = false;
      p = Tokenize(p, kind == '{' ? '}' : '%', &seg.tokens, &closed_strip);
      strip_next = closed_strip;
      pos = p;
      if (seg.kind == Segment::Kind::kBlock && !seg.tokens.empty() &&
          seg.tokens[0].type == Token::Type::kName && seg.tokens[0].text == "raw") {
        pos = Raw(pos, seg.line, &strip_next);
        continue;
      }
      if (seg.kind == Segment::Kind::kBlock && !strip_next && pos < src_.size() &&
          src_[pos] == '\n') {
        ++pos;  // trim_blocks
      }
      segments_.push_back(std::move(seg));
    }
    return std::move(segments_);
  }

 private:
  size_t FindTag(size_t pos) const {
    while (true) {
      const size_t k = src_.find('{', pos);
      if (k == std::string_view::npos || k + 1 >= src_.size()) return std::string_view::npos;
      const char c = src_[k + 1];
      if (c == '{' || c == '%' || c == '#') return k;
      pos = k + 1;
    }
  }

  int LineAt(size_t pos) const {
    return 1 + static_cast<int>(std::count(src_.begin(), src_.begin() + pos, '\n'));
  }

  void Emit(const std::string& text, size_t at) {
    if (text.empty()) return;
    Segment seg;
    seg.kind = Segment::Kind::kText;
    seg.text = text;
    seg.line = LineAt(at);
    segments_.push_back(std::move(seg));
  }

  // {% raw %}...{% endraw %}: the text between, verbatim.
  size_t Raw(size_t pos, int line, bool* strip_next) {
    size_t search = pos;
    while (true) {
      const size_t k = src_.find("{%", search);
      if (k == std::string_view::npos) throw ParseError(line, "unclosed raw block");
      size_t p = k + 2;
      const bool strip_before = p < src_.size() && src_[p] == '-';
      if (strip_before || (p < src_.size() && src_[p] == '+')) ++p;
      while (p < src_.size() && IsWs(src_[p])) ++p;
      if (src_.substr(p, 6) == "endraw") {
        p += 6;
        while (p < src_.size() && IsWs(src_[p])) ++p;
        bool strip_after = false;
        if (p < src_.size() && src_[p] == '-') {
          strip_after = true;
          ++p;
        }
        if (src_.substr(p, 2) != "%}") throw ParseError(line, "malformed endraw");
        std::string text(src_.substr(pos, k - pos));
        if (*strip_next) {
          size_t i = 0;
          while (i < text.size() && IsWs(text[i])) ++i;
          text.erase(0, i);
        }
        if (strip_before) {
          size_t e = text.size();
          while (e > 0 && IsWs(text[e - 1])) --e;
          text.resize(e);
        }
        Emit(text, pos);
        *strip_next = strip_after;
        p += 2;
        if (!strip_after && p < src_.size() && src_[p] == '\n') ++p;
        return p;
      }
      search = k + 2;
    }
  }

  // Tokens of one tag from p to its closer ("}}" or "%}", maybe "-" first);
  // returns the position after the closer.
  size_t Tokenize(size_t p, char closer, std::vector<Token>* out, bool* strip) {
    const int line = LineAt(p);
    while (true) {
      while (p < src_.size() && IsWs(src_[p])) ++p;
      if (p >= src_.size()) throw ParseError(line, "unclosed tag");
      if (src_[p] == '-' && p + 2 < src_.size() + 1 &&
          src_.substr(p + 1, 2) == std::string{closer, '}'}) {
        *strip = true;
        out->push_back(Token{Token::Type::kEnd, "", 0, 0, line});
        return p + 3;
      }
      if (src_[p] == '+' && src_.substr(p + 1, 2) == std::string{closer, '}'}) {
        out->push_back(Token{Token::Type::kEnd, "", 0, 0, line});
        return p + 3;
      }
      if (src_.substr(p, 2) == std::string{closer, '}'}) {
        out->push_back(Token{Token::Type::kEnd, "", 0, 0, line});
        return p + 2;
      }
      Token t;
      t.line = LineAt(p);
      const char c = src_[p];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = p;
        while (e < src_.size() &&
               (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_'))
          ++e;
        t.type = Token::Type::kName;
        t.text = std::string(src_.substr(p, e - p));
        p = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t e = p;
        bool is_float = false;
        while (e < src_.size() &&
               (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_'))
          ++e;
        if (e + 1 < src_.size() && src_[e] == '.' &&
            std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
          is_float = true;
          ++e;
          while (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) ++e;
        }
        if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
          size_t k = e + 1;
          if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
          if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
            is_float = true;
            e = k;
            while (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) ++e;
          }
        }
        std::string num;
        for (char ch : src_.substr(p, e - p)) {
          if (ch != '_') num += ch;
        }
        if (is_float) {
          t.type = Token::Type::kFloat;
          t.f = std::stod(num);
        } else {
          t.type = Token::Type::kInt;
          std::from_chars(num.data(), num.data() + num.size(), t.i);
        }
        p = e;
      } else if (c == '\'' || c == '"') {
        t.type = Token::Type::kString;
        p = String(p, &t.text, t.line);
      } else {
        static const char* kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*",
                                     "/",  "%",  "~",  "<",  ">",  "=",  "(", ")", "[",
                                     "]",  "{",  "}",  ",",  ".",  ":",  "|"};
        bool found = false;
        for (const char* op : kOps) {
          const size_t n = std::char_traits<char>::length(op);
          if (src_.substr(p, n) == op) {
            t.type = Token::Type::kOp;
            t.text = op;
            p += n;
            found = true;
            break;
          }
        }
        if (!found) throw ParseError(t.line, std::string("unexpected character '") + c + "'");
      }
      out->push_back(std::move(t));
    }
  }

  void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xc0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xe0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      *out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      *out += static_cast<char>(0xf0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      *out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  // A Python string literal with its escapes.
  size_t String(size_t p, std::string* out, int line) {
    const char quote = src_[p++];
    while (p < src_.size() && src_[p] != quote) {
      char c = src_[p];
      if (c == '\\' && p + 1 < src_.size()) {
        const char e = src_[p + 1];
        p += 2;
        switch (e) {
          case 'n':
            *out += '\n';
            break;
          case 't':
            *out += '\t';
            break;
          case 'r':
            *out += '\r';
            break;
          case '0':
            *out += '\0';
            break;
          case 'a':
            *out += '\a';
            break;
          case 'b':
            *out += '\b';
            break;
          case 'f':
            *out += '\f';
            break;
          case 'v':
            *out += '\v';
            break;
          case '\\':
            *out += '\\';
            break;
          case '\'':
            *out += '\'';
            break;
          case '"':
            *out += '"';
            break;
          case '\n':
            break;
          case 'x':
          case 'u':
          case 'U': {
            const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            std::from_chars(src_.data() + p, src_.data() + p + n, cp, 16);
            p += n;
            AppendUtf8(cp, out);
            break;
          }
          default:
            *out += '\\';
            *out += e;
        }
        continue;
      }
      *out += c;
      ++p;
    }
    if (p >= src_.size()) throw ParseError(line, "unclosed string literal");
    return p + 1;
  }

  std::string_view src_;
  std::vector<Segment> segments_;
};

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
      ++soft_;
      struct Leave {
        int& n;
        ~Leave() { --n; }
      } leave{soft_};
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
      ++soft_;
      struct Leave {
        int& n;
        ~Leave() { --n; }
      } leave{soft_};
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

  ExprPtr ParseMath1() {
    ExprPtr e = ParseConcat();
    while (IsOp("+") || IsOp("-")) {
      const std::string op = Cur().text;
      Next();
      e = Binary(Expr::Kind::kBinary, std::move(e), ParseConcat(), op);
    }
    return e;
  }

  ExprPtr ParseConcat() {
    ExprPtr e = ParseMath2();
    while (IsOp("~")) {
      Next();
      e = Binary(Expr::Kind::kBinary, std::move(e), ParseMath2(), "~");
    }
    return e;
  }

  ExprPtr ParseMath2() {
    ExprPtr e = ParsePow();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const std::string op = Cur().text;
      Next();
      e = Binary(Expr::Kind::kBinary, std::move(e), ParsePow(), op);
    }
    return e;
  }

  ExprPtr ParsePow() {
    ExprPtr e = ParseUnary();
    while (IsOp("**")) {
      Next();
      e = Binary(Expr::Kind::kBinary, std::move(e), ParseUnary(), "**");
    }
    return e;
  }

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
    Lexer lexer(source);
    Parser parser(lexer.Run());
    return std::make_shared<Body>(parser.ParseAll());
  } catch (const ParseError& e) {
    return InvalidArgumentError(std::string("template syntax error: ") + e.what());
  }
}

}  // namespace kvmesh::jinja::internal
