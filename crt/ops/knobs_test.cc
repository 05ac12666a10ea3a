// Checks crt/ops/knobs.json against the C headers: every operator, entry and
// symbol name, knob macro and default, and that the candidate grid compiled by
// ops_candidates_test_c.c covers every allowed value. Holds a small JSON parser
// (objects, arrays, strings without escapes beyond \" \\ \/ \n \t, integers,
// true/false/null) — enough for knobs.json, no library needed.

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "benchfarm/ops/add_kernel.h"
#include "benchfarm/ops/conv2d_kernel.h"
#include "benchfarm/ops/matmul_kernel.h"
#include "crt/ops/ops_candidates_test_c.h"

namespace {

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool b = false;
  long long number = 0;
  std::string str;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;  // in file order

  const Json* Find(const std::string& key) const {
    for (const auto& kv : object)
      if (kv.first == key) return &kv.second;
    return nullptr;
  }
  // The member `key`; fails the test (and returns a null value) if absent.
  const Json& operator[](const std::string& key) const {
    static const Json kMissing;
    const Json* v = Find(key);
    EXPECT_NE(v, nullptr) << "missing key \"" << key << "\"";
    return v != nullptr ? *v : kMissing;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  bool Parse(Json* out) {
    if (!Value(out)) return false;
    Skip();
    return pos_ == s_.size() || Fail("trailing characters");
  }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at offset " + std::to_string(pos_);
    return false;
  }
  void Skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    Skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return Fail("bad literal");
    pos_ += w.size();
    return true;
  }
  bool String(std::string* out) {
    if (!Eat('"')) return Fail("expected string");
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) return Fail("bad escape");
        const char e = s_[pos_++];
        c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
        if (e != 'n' && e != 't' && e != '"' && e != '\\' && e != '/') return Fail("bad escape");
      }
      out->push_back(c);
    }
    if (pos_ >= s_.size()) return Fail("unterminated string");
    ++pos_;
    return true;
  }
  bool Value(Json* out) {
    Skip();
    if (pos_ >= s_.size()) return Fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      out->kind = Json::kObject;
      if (Eat('}')) return true;
      do {
        std::string key;
        Json v;
        Skip();
        if (!String(&key) || !Eat(':') || !Value(&v)) return Fail("bad member");
        out->object.emplace_back(key, std::move(v));
      } while (Eat(','));
      return Eat('}') || Fail("expected }");
    }
    if (c == '[') {
      ++pos_;
      out->kind = Json::kArray;
      if (Eat(']')) return true;
      do {
        Json v;
        if (!Value(&v)) return false;
        out->array.push_back(std::move(v));
      } while (Eat(','));
      return Eat(']') || Fail("expected ]");
    }
    if (c == '"') {
      out->kind = Json::kString;
      return String(&out->str);
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t used = 0;
      out->kind = Json::kNumber;
      out->number = std::stoll(s_.substr(pos_), &used);
      pos_ += used;
      if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E'))
        return Fail("only integers are expected");
      return true;
    }
    if (c == 't') return out->kind = Json::kBool, out->b = true, Literal("true");
    if (c == 'f') return out->kind = Json::kBool, Literal("false");
    if (c == 'n') return Literal("null");
    return Fail("unexpected character");
  }

  const std::string s_;
  size_t pos_ = 0;
  std::string error_;
};

TEST(JsonParser, ParsesTheSubsetItNeeds) {
  Json j;
  Parser p(R"({"a": [1, -2, "x\"y"], "b": {"c": true, "d": null}, "e": false})");
  ASSERT_TRUE(p.Parse(&j)) << p.error();
  EXPECT_EQ(j["a"].array.size(), 3u);
  EXPECT_EQ(j["a"].array[1].number, -2);
  EXPECT_EQ(j["a"].array[2].str, "x\"y");
  EXPECT_TRUE(j["b"]["c"].b);
  EXPECT_EQ(j["b"]["d"].kind, Json::kNull);
  EXPECT_EQ(j["e"].kind, Json::kBool);
  Json bad;
  EXPECT_FALSE(Parser(R"({"a": [1, 2})").Parse(&bad));
  EXPECT_FALSE(Parser(R"({"a": 1.5})").Parse(&bad));
  EXPECT_FALSE(Parser(R"({"a": 1} x)").Parse(&bad));
}

// knobs.json, found in the test's runfiles (the working directory is the
// runfiles root of workspace "benchfarm"; TEST_SRCDIR/TEST_WORKSPACE say so too).
std::string ReadKnobsJson() {
  std::vector<std::string> candidates = {"crt/ops/knobs.json"};
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr) {
    candidates.push_back(std::string(srcdir) + "/" + (workspace ? workspace : "benchfarm") +
                         "/crt/ops/knobs.json");
  }
  for (const auto& path : candidates) {
    std::ifstream in(path);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    }
  }
  ADD_FAILURE() << "knobs.json not found in runfiles";
  return "";
}

class KnobsJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Parser parser(text_ = ReadKnobsJson());
    ASSERT_TRUE(parser.Parse(&root_)) << parser.error();
    ASSERT_EQ(root_.kind, Json::kObject);
  }

  const Json* Op(const std::string& name) {
    for (const auto& op : root_["ops"].array)
      if (op["op"].str == name) return &op;
    ADD_FAILURE() << "no op " << name;
    return nullptr;
  }

  std::string text_;
  Json root_;
};

// What the headers say about one knob.
struct HeaderKnob {
  std::string name;
  std::string macro;
  std::string default_value;  // the macro's expansion
};

struct HeaderOp {
  std::string op;
  std::string symbol;
  std::string define_macro;
  std::string header;
  std::vector<HeaderKnob> knobs;  // in BF_DEFINE_* argument order
};

std::vector<HeaderOp> HeaderOps() {
  return {
      {"add",
       "bf_ops_add",
       "BF_DEFINE_ADD",
       "benchfarm/ops/add_kernel.h",
       {{"unroll", "BF_OPS_ADD_DEFAULT_UNROLL", BF_OPS_STR(BF_OPS_ADD_DEFAULT_UNROLL)}}},
      {"matmul",
       "bf_ops_matmul",
       "BF_DEFINE_MATMUL",
       "benchfarm/ops/matmul_kernel.h",
       {{"tile_m", "BF_OPS_MATMUL_DEFAULT_TILE_M", BF_OPS_STR(BF_OPS_MATMUL_DEFAULT_TILE_M)},
        {"tile_n", "BF_OPS_MATMUL_DEFAULT_TILE_N", BF_OPS_STR(BF_OPS_MATMUL_DEFAULT_TILE_N)},
        {"tile_k", "BF_OPS_MATMUL_DEFAULT_TILE_K", BF_OPS_STR(BF_OPS_MATMUL_DEFAULT_TILE_K)},
        {"unroll", "BF_OPS_MATMUL_DEFAULT_UNROLL", BF_OPS_STR(BF_OPS_MATMUL_DEFAULT_UNROLL)},
        {"order", "BF_OPS_MATMUL_DEFAULT_ORDER", BF_OPS_STR(BF_OPS_MATMUL_DEFAULT_ORDER)}}},
      {"conv2d",
       "bf_ops_conv2d",
       "BF_DEFINE_CONV2D",
       "benchfarm/ops/conv2d_kernel.h",
       {{"tile_oc", "BF_OPS_CONV2D_DEFAULT_TILE_OC", BF_OPS_STR(BF_OPS_CONV2D_DEFAULT_TILE_OC)},
        {"tile_ow", "BF_OPS_CONV2D_DEFAULT_TILE_OW", BF_OPS_STR(BF_OPS_CONV2D_DEFAULT_TILE_OW)},
        {"unroll_kw", "BF_OPS_CONV2D_DEFAULT_UNROLL_KW",
         BF_OPS_STR(BF_OPS_CONV2D_DEFAULT_UNROLL_KW)},
        {"order", "BF_OPS_CONV2D_DEFAULT_ORDER", BF_OPS_STR(BF_OPS_CONV2D_DEFAULT_ORDER)}}},
  };
}

std::string ValueString(const Json& v) {
  return v.kind == Json::kNumber ? std::to_string(v.number) : v.str;
}

TEST_F(KnobsJsonTest, ListsExactlyTheThreeOps) {
  ASSERT_EQ(root_["schema_version"].number, 1);
  std::vector<std::string> ops;
  for (const auto& op : root_["ops"].array) ops.push_back(op["op"].str);
  EXPECT_EQ(ops, (std::vector<std::string>{"add", "matmul", "conv2d"}));
  std::vector<std::string> dirs;
  for (const auto& d : root_["include_dirs"].array) dirs.push_back(d.str);
  EXPECT_EQ(dirs,
            (std::vector<std::string>{"crt/include", "crt/runtime/include", "crt/ops/include"}));
}

TEST_F(KnobsJsonTest, NamesMatchTheSystemLibraryAndHeaders) {
  for (const auto& h : HeaderOps()) {
    const Json* op = Op(h.op);
    ASSERT_NE(op, nullptr);
    EXPECT_EQ((*op)["entry"].str, h.op);
    EXPECT_EQ((*op)["symbol"].str, h.symbol);
    EXPECT_EQ((*op)["reference_entry"].str, h.op + "_reference");
    EXPECT_EQ((*op)["reference_symbol"].str, h.symbol + "_reference");
    EXPECT_EQ((*op)["header"].str, h.header);
  }
}

TEST_F(KnobsJsonTest, InstantiateTemplateNamesEveryKnobInMacroOrder) {
  for (const auto& h : HeaderOps()) {
    const Json* op = Op(h.op);
    ASSERT_NE(op, nullptr);
    std::string want = h.define_macro + "({fn}";
    for (const auto& k : h.knobs) want += ", {" + k.name + "}";
    want += ");";
    EXPECT_EQ((*op)["instantiate"].str, want);
  }
}

TEST_F(KnobsJsonTest, KnobsMacrosAndDefaultsMatchHeaders) {
  for (const auto& h : HeaderOps()) {
    const Json* op = Op(h.op);
    ASSERT_NE(op, nullptr);
    const auto& knobs = (*op)["knobs"].array;
    ASSERT_EQ(knobs.size(), h.knobs.size()) << h.op;
    for (size_t i = 0; i < knobs.size(); ++i) {
      const Json& k = knobs[i];
      SCOPED_TRACE(h.op + "." + h.knobs[i].name);
      EXPECT_EQ(k["name"].str, h.knobs[i].name);
      EXPECT_EQ(k["macro"].str, h.knobs[i].macro);
      EXPECT_NE(text_.find(h.knobs[i].macro), std::string::npos);
      EXPECT_EQ(ValueString(k["default"]), h.knobs[i].default_value);
      // The default is one of the allowed values; values are distinct.
      std::set<std::string> values;
      for (const auto& v : k["values"].array) {
        EXPECT_TRUE(values.insert(ValueString(v)).second) << "duplicate " << ValueString(v);
        if (v.kind == Json::kNumber) {
          EXPECT_GE(v.number, 1);
          EXPECT_LE(v.number, BF_OPS_MAX_TILE);
        }
      }
      EXPECT_EQ(values.count(h.knobs[i].default_value), 1u);
    }
  }
}

TEST_F(KnobsJsonTest, ArgsAreInputsThenOneFloat32OutputOverNamedDims) {
  for (const auto& op : root_["ops"].array) {
    SCOPED_TRACE(op["op"].str);
    const auto& args = op["args"].array;
    ASSERT_EQ(args.size(), 3u);
    std::set<std::string> names;
    for (const auto& kv : op["dims"].object) {
      names.insert(kv.first);
      EXPECT_GE(kv.second.number, 1);
    }
    for (const auto& kv : op["derived"].object) names.insert(kv.first);
    for (size_t i = 0; i < args.size(); ++i) {
      EXPECT_EQ(args[i]["role"].str, i + 1 < args.size() ? "input" : "output");
      EXPECT_EQ(args[i]["dtype"].str, "float32");
      for (const auto& d : args[i]["shape"].array) EXPECT_EQ(names.count(d.str), 1u) << d.str;
    }
  }
  const Json* conv = Op("conv2d");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ((*conv)["derived"]["OH"].str, "H - KH + 1");
  EXPECT_EQ((*conv)["derived"]["OW"].str, "W - KW + 1");
  EXPECT_TRUE((*Op("add"))["any_shape"].b);
}

// Every allowed value of every knob was compiled into at least one candidate.
TEST_F(KnobsJsonTest, CandidateGridCoversEveryAllowedValue) {
  struct Grid {
    const char* op;
    const bf_ops_test_candidate_t* (*get)(int*);
  };
  for (const Grid& g :
       {Grid{"add", bf_ops_test_add_candidates}, Grid{"matmul", bf_ops_test_matmul_candidates},
        Grid{"conv2d", bf_ops_test_conv2d_candidates}}) {
    int n = 0;
    const bf_ops_test_candidate_t* cands = g.get(&n);
    const Json* op = Op(g.op);
    ASSERT_NE(op, nullptr);
    const auto& knobs = (*op)["knobs"].array;
    size_t int_index = 0;
    for (const auto& k : knobs) {
      SCOPED_TRACE(std::string(g.op) + "." + k["name"].str);
      const bool is_order = k["name"].str == "order";
      for (const auto& v : k["values"].array) {
        bool covered = false;
        for (int i = 0; i < n; ++i) {
          covered |= is_order ? (cands[i].order != nullptr && v.str == cands[i].order)
                              : cands[i].knobs[int_index] == v.number;
        }
        EXPECT_TRUE(covered) << ValueString(v);
      }
      if (!is_order) ++int_index;
    }
  }
}

}  // namespace
