// Values of the Jinja engine (common/jinja/jinja.h): Python's data model,
// as far as templates see it. Internal to the engine.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kvmesh::jinja::internal {

// A template failed at run time; the message is what the user sees.
struct RenderError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Value;
struct Interpreter;
using List = std::vector<Value>;

struct Dict {
  std::vector<std::pair<Value, Value>> items;  // insertion order, as Python's
  bool is_namespace = false;                   // namespace(): takes attribute assignment
  const Value* Find(const Value& key) const;
  Value* Find(const Value& key);
  void Set(const Value& key, Value value);
};

struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
  // The value of parameter `name` at position `index` (or its keyword), or
  // `fallback`; the caller then checks no argument is left over.
  const Value* Get(size_t index, const std::string& name) const;
};

using NativeFn = std::function<Value(Interpreter&, Args&)>;

struct Function {
  std::string name;
  NativeFn call;
};

struct Value {
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kFunction
  };
  Kind kind = Kind::kUndefined;
  bool tuple = false;  // a kList made by a tuple expression (repr uses parentheses)
  bool generator =
      false;          // a kList that is a Python generator (map, select, ...): no len(), no JSON
  bool safe = false;  // a kString that is Markup (|safe): `+` escapes the other operand
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;  // kString; for kUndefined, what was looked up (for errors)
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;
  std::shared_ptr<Function> fn;

  static Value Undefined(std::string hint = "") {
    Value v;
    v.s = std::move(hint);
    return v;
  }
  static Value None() {
    Value v;
    v.kind = Kind::kNone;
    return v;
  }
  static Value Bool(bool x) {
    Value v;
    v.kind = Kind::kBool;
    v.b = x;
    return v;
  }
  static Value Int(int64_t x) {
    Value v;
    v.kind = Kind::kInt;
    v.i = x;
    return v;
  }
  static Value Float(double x) {
    Value v;
    v.kind = Kind::kFloat;
    v.f = x;
    return v;
  }
  static Value Str(std::string x) {
    Value v;
    v.kind = Kind::kString;
    v.s = std::move(x);
    return v;
  }
  static Value MakeList(List items = {}, bool tuple = false) {
    Value v;
    v.kind = Kind::kList;
    v.tuple = tuple;
    v.list = std::make_shared<List>(std::move(items));
    return v;
  }
  static Value MakeDict() {
    Value v;
    v.kind = Kind::kDict;
    v.dict = std::make_shared<Dict>();
    return v;
  }
  static Value Fn(std::string name, NativeFn call) {
    Value v;
    v.kind = Kind::kFunction;
    v.fn = std::make_shared<Function>(Function{std::move(name), std::move(call)});
    return v;
  }
  static Value FromJson(const nlohmann::ordered_json& j);

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_list() const { return kind == Kind::kList; }
  bool is_dict() const { return kind == Kind::kDict; }
  bool is_number() const {
    return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool;
  }
  double as_double() const {
    return kind == Kind::kFloat ? f : kind == Kind::kBool ? b : static_cast<double>(i);
  }
};

// Python's bool(), str(), repr() and ==.
bool Truthy(const Value& v);
std::string ToStr(const Value& v);
std::string Repr(const Value& v);
bool Equal(const Value& a, const Value& b);
// -1, 0, 1 as Python orders numbers, strings and lists; RenderError for
// other pairs.
int Compare(const Value& a, const Value& b);
// Python's "<class name>" as TypeErrors name it: 'str', 'int', 'list', ...
std::string TypeName(const Value& v);
// json.dumps(v, ensure_ascii=False, indent=..., separators=..., sort_keys=...).
std::string ToJson(const Value& v, int indent, const std::string& item_sep,
                   const std::string& key_sep, bool sort_keys);
std::string FloatRepr(double d);

// UTF-8 strings by code point, as Python indexes them.
std::vector<std::string> CodePoints(const std::string& s);

}  // namespace kvmesh::jinja::internal
