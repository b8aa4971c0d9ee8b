#pragma once
// Recorded benchmark runs (bench/results/*.json, written by bench_spmm and bench_spmv) read back
// for the rule tests: for each (matrix, N), the times of the tuning candidates, or the rule's and
// the tuned kernel's time. A small JSON reader is enough: the files are the benchmarks' own output.
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace krysp::test {

/// A JSON value (numbers as double; objects keep their keys sorted).
struct Json {
  enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;
  /// The member `key` of an object; a null value when there is none.
  const Json& operator[](const std::string& key) const {
    static const Json null;
    const auto it = object.find(key);
    return it == object.end() ? null : it->second;
  }
};

namespace json_detail {
struct Reader {
  const std::string& t;
  std::size_t i = 0;
  void ws() {
    while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
  }
  [[noreturn]] void fail(const char* what) const {
    throw std::runtime_error(std::string("JSON: ") + what + " at offset " + std::to_string(i));
  }
  void expect(char c) {
    ws();
    if (i >= t.size() || t[i] != c) fail("unexpected character");
    ++i;
  }
  std::string str() {
    expect('"');
    std::string out;
    while (i < t.size() && t[i] != '"') {
      if (t[i] == '\\' && i + 1 < t.size()) {
        ++i;
        const char e = t[i];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;  // \uXXXX does not occur in the benchmarks' output
      } else {
        out += t[i];
      }
      ++i;
    }
    if (i >= t.size()) fail("unterminated string");
    ++i;
    return out;
  }
  Json value() {
    ws();
    if (i >= t.size()) fail("unexpected end");
    Json v;
    const char c = t[i];
    if (c == '{') {
      v.type = Json::Type::Object;
      ++i;
      ws();
      if (i < t.size() && t[i] == '}') return ++i, v;
      for (;;) {
        std::string k = str();
        expect(':');
        v.object[k] = value();
        ws();
        if (i < t.size() && t[i] == ',') {
          ++i;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.type = Json::Type::Array;
      ++i;
      ws();
      if (i < t.size() && t[i] == ']') return ++i, v;
      for (;;) {
        v.array.push_back(value());
        ws();
        if (i < t.size() && t[i] == ',') {
          ++i;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.type = Json::Type::String;
      v.string = str();
      return v;
    }
    for (const char* word : {"true", "false", "null"})
      if (t.compare(i, std::string(word).size(), word) == 0) {
        i += std::string(word).size();
        v.type = word[0] == 'n' ? Json::Type::Null : Json::Type::Bool;
        v.number = word[0] == 't' ? 1 : 0;
        return v;
      }
    char* end = nullptr;
    v.number = std::strtod(t.c_str() + i, &end);
    if (end == t.c_str() + i) fail("bad value");
    i = std::size_t(end - t.c_str());
    v.type = Json::Type::Number;
    return v;
  }
};
}  // namespace json_detail

/// Parses a whole JSON text; std::runtime_error on bad text.
inline Json parse_json(const std::string& text) {
  json_detail::Reader r{text};
  Json v = r.value();
  r.ws();
  if (r.i != text.size()) r.fail("trailing text");
  return v;
}

/// The JSON file bench/results/<name> of the source tree; std::runtime_error when it is missing.
inline Json recorded_bench(const std::string& name) {
  const std::string path = std::string(KRYSP_TEST_DATA) + "/../../bench/results/" + name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_json(ss.str());
}

}  // namespace krysp::test
