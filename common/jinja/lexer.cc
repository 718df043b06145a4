#include "common/jinja/lexer.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace kvmesh::jinja::internal {
namespace {

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

}  // namespace

std::vector<Segment> Lex(std::string_view source) { return Lexer(source).Run(); }

}  // namespace kvmesh::jinja::internal
