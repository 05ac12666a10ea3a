// The trial contract: every limit at, just under and just over its cap (the exact message the
// tracker and the agent give), the checks of template and C source trials, the shapes a trial
// gets, and the effective measure options with their defaults.
#include "catalog/trial.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "catalog/operator.h"
#include "google/protobuf/text_format.h"

namespace benchfarm::catalog {
namespace {

using ::testing::HasSubstr;
using Shapes = std::vector<std::vector<int64_t>>;

// The built-in operators, any version (the tracker's catalog also checks versions).
absl::StatusOr<const v1::OpTemplate*> FindBuiltin(const v1::TemplateOperator& tpl) {
  const v1::Operator* op = BuiltinKnobSpace().Find(tpl.op());
  if (op == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("op.template_op.op: unknown operator \"", tpl.op(), "\""));
  }
  return &op->spec();
}

absl::StatusOr<Shapes> Check(const v1::Trial& t) {
  absl::StatusOr<TrialArgs> args = CheckTrial(t, FindBuiltin);
  if (!args.ok()) return args.status();
  return args->Shapes();
}

v1::Trial Parse(const char* text) {
  v1::Trial t;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &t)) << text;
  return t;
}

// matmul of 8x8 matrices on a host board.
v1::Trial Template() {
  return Parse(R"pb(
    board_kind: "host"
    op { template_op { op: "matmul" } }
    args {
      shape: [ 8, 8 ]
      dtype: "float32"
    }
    args {
      shape: [ 8, 8 ]
      dtype: "float32"
    }
    args {
      shape: [ 8, 8 ]
      dtype: "float32"
    }
  )pb");
}

// A one-off C source of two arguments of 4 elements.
v1::Trial CSource() {
  return Parse(R"pb(
    board_kind: "host"
    op { c_source: "int f;" entry_function: "f" }
    args { shape: 4 }
    args { shape: 4 }
  )pb");
}

std::string Repeat(char c, size_t n) { return std::string(n, c); }

TEST(CheckTrial, LimitsAtUnderAndOverTheirCaps) {
  struct Case {
    std::string name;
    std::function<v1::Trial()> make;
    std::string want;  // the error message; "" for a trial the contract takes
  };
  auto template_with = [](std::function<void(v1::Trial*)> change) {
    return [change] {
      v1::Trial t = Template();
      change(&t);
      return t;
    };
  };
  auto c_source_with = [](std::function<void(v1::Trial*)> change) {
    return [change] {
      v1::Trial t = CSource();
      change(&t);
      return t;
    };
  };
  auto labels = [](int n) {
    return [n](v1::Trial* t) {
      for (int k = 0; k < n; ++k) (*t->mutable_labels())[absl::StrCat("k", k)] = "v";
    };
  };
  auto pool = [](int entries, size_t bytes) {
    return [entries, bytes](v1::Trial* t) {
      for (int k = 0; k < entries; ++k)
        t->mutable_op()->mutable_template_op()->add_image_pool(Repeat('p', bytes));
    };
  };
  auto shape = [](std::vector<int64_t> dims) {
    return [dims](v1::Trial* t) {
      t->mutable_args(0)->clear_shape();
      for (int64_t d : dims) t->mutable_args(0)->add_shape(d);
    };
  };
  auto measure = [](std::function<void(v1::MeasureOptions*)> set) {
    return [set](v1::Trial* t) { set(t->mutable_measure()); };
  };
  auto knobs = [](int n) {
    return [n](v1::Trial* t) {
      for (int k = 0; k < n; ++k) {
        (*t->mutable_op()->mutable_template_op()->mutable_knobs())[absl::StrCat("k", k)] = "1";
      }
    };
  };
  const std::vector<Case> cases = {
      {"valid template", Template, ""},
      {"valid C source", CSource, ""},
      // Byte caps.
      {"board_kind at", template_with([](v1::Trial* t) { t->set_board_kind(Repeat('k', 128)); }),
       ""},
      {"board_kind over", template_with([](v1::Trial* t) { t->set_board_kind(Repeat('k', 129)); }),
       "board_kind: 129 bytes, at most 128"},
      {"board_id at", template_with([](v1::Trial* t) { t->set_board_id(Repeat('b', 128)); }), ""},
      {"board_id over", template_with([](v1::Trial* t) { t->set_board_id(Repeat('b', 129)); }),
       "board_id: 129 bytes, at most 128"},
      {"labels at", template_with(labels(32)), ""},
      {"labels over", template_with(labels(33)), "labels: 33 labels, at most 32"},
      {"label key at",
       template_with([](v1::Trial* t) { (*t->mutable_labels())[Repeat('k', 128)] = "v"; }), ""},
      {"label key over",
       template_with([](v1::Trial* t) { (*t->mutable_labels())[Repeat('k', 129)] = "v"; }),
       "labels: a key of 129 bytes, at most 128"},
      {"label value at",
       template_with([](v1::Trial* t) { (*t->mutable_labels())["k"] = Repeat('v', 256); }), ""},
      {"label value over",
       template_with([](v1::Trial* t) { (*t->mutable_labels())["k"] = Repeat('v', 257); }),
       "labels[\"k\"]: 257 bytes, at most 256"},
      {"entry_function at",
       c_source_with([](v1::Trial* t) { t->mutable_op()->set_entry_function(Repeat('f', 64)); }),
       ""},
      {"entry_function over",
       c_source_with([](v1::Trial* t) { t->mutable_op()->set_entry_function(Repeat('f', 65)); }),
       "op.entry_function: 65 bytes, at most 64"},
      {"reference_function over", template_with([](v1::Trial* t) {
         t->mutable_op()->set_reference_function(Repeat('r', 65));
       }),
       "op.reference_function: 65 bytes, at most 64"},
      {"c_source at",
       c_source_with([](v1::Trial* t) { t->mutable_op()->set_c_source(Repeat('c', 1 << 20)); }),
       ""},
      {"c_source over", c_source_with([](v1::Trial* t) {
         t->mutable_op()->set_c_source(Repeat('c', (1 << 20) + 1));
       }),
       "op.c_source: 1048577 bytes, at most 1048576"},
      {"op name at (then looked up)", template_with([](v1::Trial* t) {
         t->mutable_op()->mutable_template_op()->set_op(Repeat('o', 128));
       }),
       absl::StrCat("op.template_op.op: unknown operator \"", Repeat('o', 128), "\"")},
      {"op name over", template_with([](v1::Trial* t) {
         t->mutable_op()->mutable_template_op()->set_op(Repeat('o', 129));
       }),
       "op.template_op.op: 129 bytes, at most 128"},
      {"version at", template_with([](v1::Trial* t) {
         t->mutable_op()->mutable_template_op()->set_version(Repeat('0', 64));
       }),
       ""},
      {"version over", template_with([](v1::Trial* t) {
         t->mutable_op()->mutable_template_op()->set_version(Repeat('0', 65));
       }),
       "op.template_op.version: 65 bytes, at most 64"},
      {"knob name over", template_with([](v1::Trial* t) {
         (*t->mutable_op()->mutable_template_op()->mutable_knobs())[Repeat('n', 129)] = "1";
       }),
       "op.template_op.knobs: a name of 129 bytes, at most 128"},
      {"knob value at (then checked)", template_with([](v1::Trial* t) {
         (*t->mutable_op()->mutable_template_op()->mutable_knobs())["tile_m"] = Repeat('1', 256);
       }),
       absl::StrCat("op.template_op.knobs: matmul knob tile_m = \"", Repeat('1', 256),
                    "\" is not one of 1, 2, 4, 8, 16, 32")},
      {"knob value over", template_with([](v1::Trial* t) {
         (*t->mutable_op()->mutable_template_op()->mutable_knobs())["tile_m"] = Repeat('1', 257);
       }),
       "op.template_op.knobs[\"tile_m\"]: 257 bytes, at most 256"},
      {"knobs over", template_with(knobs(65)), "op.template_op.knobs: too many"},
      {"image pool entries at", template_with(pool(4096, 1)), ""},
      {"image pool entries over", template_with(pool(4097, 1)),
       "op.template_op.image_pool: 4097 entries, at most 4096"},
      {"image pool entry at", template_with(pool(1, 1024)), ""},
      {"image pool entry over", template_with(pool(1, 1025)),
       "op.template_op.image_pool[0]: 1025 bytes, at most 1024"},
      {"image pool bytes at", template_with(pool(512, 1024)), ""},
      {"image pool bytes over", template_with(pool(513, 1024)),
       "op.template_op.image_pool: 525312 bytes in all, at most 524288"},
      {"dtype over",
       template_with([](v1::Trial* t) { t->mutable_args(0)->set_dtype(Repeat('d', 17)); }),
       "args[0].dtype: 17 bytes, at most 16"},
      // Arguments.
      {"args at", c_source_with([](v1::Trial* t) {
         while (t->args_size() < 16) t->add_args()->add_shape(1);
       }),
       ""},
      {"args over", c_source_with([](v1::Trial* t) {
         while (t->args_size() < 17) t->add_args()->add_shape(1);
       }),
       "args: more than 16"},
      {"ndim at", c_source_with(shape({1, 1, 1, 1, 1, 1})), ""},
      {"ndim over", c_source_with(shape({1, 1, 1, 1, 1, 1, 1})),
       "args[0].shape: need 1..6 dimensions"},
      {"ndim none", c_source_with(shape({})), "args[0].shape: need 1..6 dimensions"},
      {"dim at", c_source_with(shape({int64_t{1} << 28})), ""},
      {"dim over", c_source_with(shape({(int64_t{1} << 28) + 1})),
       "args[0].shape[0]: must be in 1..2^28"},
      {"dim zero", c_source_with(shape({4, 0})), "args[0].shape[1]: must be in 1..2^28"},
      {"elements at", c_source_with(shape({1 << 14, 1 << 14})), ""},
      {"elements over", c_source_with(shape({1 << 14, (1 << 14) + 1})),
       "args[0].shape: more than 2^28 elements"},
      {"template dim over", template_with(shape({8, (int64_t{1} << 28) + 1})),
       "args[0].shape[1]: must be in 1..2^28"},
      // Measure options and priority.
      {"number at", template_with(measure([](v1::MeasureOptions* m) { m->set_number(1000000); })),
       ""},
      {"number over", template_with(measure([](v1::MeasureOptions* m) { m->set_number(1000001); })),
       "measure.number: must be in 0..1e6"},
      {"number negative", template_with(measure([](v1::MeasureOptions* m) { m->set_number(-1); })),
       "measure.number: must be in 0..1e6"},
      {"repeat at", template_with(measure([](v1::MeasureOptions* m) { m->set_repeat(1024); })), ""},
      {"repeat over", template_with(measure([](v1::MeasureOptions* m) { m->set_repeat(1025); })),
       "measure.repeat: must be in 0..1024"},
      {"min_repeat_ms at",
       template_with(measure([](v1::MeasureOptions* m) { m->set_min_repeat_ms(600000); })), ""},
      {"min_repeat_ms over",
       template_with(measure([](v1::MeasureOptions* m) { m->set_min_repeat_ms(600001); })),
       "measure.min_repeat_ms: must be in 0..600000"},
      {"cooldown_ms at",
       template_with(measure([](v1::MeasureOptions* m) { m->set_cooldown_ms(600000); })), ""},
      {"cooldown_ms over",
       template_with(measure([](v1::MeasureOptions* m) { m->set_cooldown_ms(600001); })),
       "measure.cooldown_ms: must be in 0..600000"},
      {"timeout_ms at",
       template_with(measure([](v1::MeasureOptions* m) { m->set_timeout_ms(3600000); })), ""},
      {"timeout_ms over",
       template_with(measure([](v1::MeasureOptions* m) { m->set_timeout_ms(3600001); })),
       "measure.timeout_ms: must be in 0..3600000"},
      {"target_rel_ci under",
       template_with(measure([](v1::MeasureOptions* m) { m->set_target_rel_ci(0.999); })), ""},
      {"target_rel_ci at",
       template_with(measure([](v1::MeasureOptions* m) { m->set_target_rel_ci(1); })),
       "measure.target_rel_ci: must be in [0, 1) (0.01: +-1 %; 0: fixed mode)"},
      {"budget_ms at",
       template_with(measure([](v1::MeasureOptions* m) { m->set_budget_ms(3600000); })), ""},
      {"budget_ms over",
       template_with(measure([](v1::MeasureOptions* m) { m->set_budget_ms(3600001); })),
       "measure.budget_ms: must be in 0..3600000"},
      {"max_repeat at",
       template_with(measure([](v1::MeasureOptions* m) { m->set_max_repeat(1024); })), ""},
      {"max_repeat over",
       template_with(measure([](v1::MeasureOptions* m) { m->set_max_repeat(1025); })),
       "measure.max_repeat: must be in 0..1024"},
      {"priority at", template_with([](v1::Trial* t) { t->set_priority(100); }), ""},
      {"priority over", template_with([](v1::Trial* t) { t->set_priority(101); }),
       "priority: must be in 0..100"},
      {"priority negative", template_with([](v1::Trial* t) { t->set_priority(-1); }),
       "priority: must be in 0..100"},
      // Required fields and the operator.
      {"no board kind", template_with([](v1::Trial* t) { t->clear_board_kind(); }),
       "board_kind: required"},
      {"no op", template_with([](v1::Trial* t) { t->clear_op(); }),
       "op: set template_op or c_source"},
      {"no op name",
       template_with([](v1::Trial* t) { t->mutable_op()->mutable_template_op()->clear_op(); }),
       "op.template_op.op: required"},
      {"template reference",
       template_with([](v1::Trial* t) { t->mutable_op()->set_reference_function("1x"); }),
       "op.reference_function: not a C identifier"},
      {"template shapes", template_with([](v1::Trial* t) { t->mutable_args(1)->set_shape(0, 4); }),
       "args[1].shape[0]: K is 8 in args[0], 4 here"},
      {"C source without entry",
       c_source_with([](v1::Trial* t) { t->mutable_op()->clear_entry_function(); }),
       "op.entry_function: required with c_source"},
      {"C source entry",
       c_source_with([](v1::Trial* t) { t->mutable_op()->set_entry_function("1x"); }),
       "op.entry_function: not a C identifier"},
      {"C source reference",
       c_source_with([](v1::Trial* t) { t->mutable_op()->set_reference_function("1x"); }),
       "op.reference_function: not a C identifier"},
      {"C source checked without reference",
       c_source_with([](v1::Trial* t) { t->set_check_outputs(true); }),
       "op.reference_function: required to check the outputs"},
      {"C source cflags", c_source_with([](v1::Trial* t) {
         t->mutable_op()->add_cflags("-O3");
         t->mutable_op()->add_cflags("-mthumb");
       }),
       ""},
      {"C source cflags refused",
       c_source_with([](v1::Trial* t) { t->mutable_op()->add_cflags("-B/tmp/evil"); }),
       "op.cflags[0]: \"-B/tmp/evil\" is refused: it names where the compiler finds its programs "
       "(code run at build time); only -O (optimisation), -f (code generation) and -m (target) "
       "options are taken"},
      {"C source cflags at", c_source_with([](v1::Trial* t) {
         for (int k = 0; k < 16; ++k) t->mutable_op()->add_cflags("-O2");
       }),
       ""},
      {"C source cflags over", c_source_with([](v1::Trial* t) {
         for (int k = 0; k < 17; ++k) t->mutable_op()->add_cflags("-O2");
       }),
       "op.cflags: 17 options, at most 16"},
      {"C source cflag over",
       c_source_with([](v1::Trial* t) { t->mutable_op()->add_cflags("-f" + Repeat('x', 63)); }),
       "op.cflags[0]: 65 bytes, at most 64"},
      {"template cflags", template_with([](v1::Trial* t) { t->mutable_op()->add_cflags("-O3"); }),
       "op.cflags: a template operator's compile options are its own (matmul's cflags and cflag "
       "knobs)"},
      {"C source of one argument",
       c_source_with([](v1::Trial* t) { t->mutable_args()->RemoveLast(); }),
       "args: a C source trial names its arguments: inputs, then the output"},
      {"C source dtype",
       c_source_with([](v1::Trial* t) { t->mutable_args(1)->set_dtype("int64"); }),
       "args[1].dtype: \"int64\" is not a dtype benchfarm takes (int8, uint8, int16, uint16, "
       "int32, uint32, float16, float32, float64)"},
      {"C source range of the output", c_source_with([](v1::Trial* t) {
         t->mutable_args(1)->add_range(0);
         t->mutable_args(1)->add_range(1);
       }),
       "args[1].range: the output is not filled"},
      {"C source range outside int8", c_source_with([](v1::Trial* t) {
         t->mutable_args(0)->set_dtype("int8");
         t->mutable_args(0)->add_range(-200);
         t->mutable_args(0)->add_range(0);
       }),
       "args[0].range: [-200, 0] is not a range of int8 (whole numbers in -128..127, lo <= hi)"},
      {"C source negative tolerance",
       c_source_with([](v1::Trial* t) { t->mutable_op()->set_atol(-1); }),
       "op.atol: -1: must be finite and >= 0"},
      {"C source NaN tolerance",
       c_source_with([](v1::Trial* t) { t->mutable_op()->set_rtol(std::nan("")); }),
       "op.rtol: nan: must be finite and >= 0"},
      {"C source tolerance of an integer output", c_source_with([](v1::Trial* t) {
         t->mutable_args(1)->set_dtype("int16");
         t->mutable_op()->set_atol(1);
       }),
       "op.atol: the output is int16: integer outputs must equal the reference's"},
      {"template tolerance", template_with([](v1::Trial* t) { t->mutable_op()->set_atol(1); }),
       "op.atol: a template operator's tolerance is its own (matmul's)"},
  };
  // 64 knobs pass the count (then none of them is matmul's: which one is named first varies).
  EXPECT_THAT(Check(template_with(knobs(64))()).status().message(),
              HasSubstr("op.template_op.knobs: matmul has no knob \"k"));
  for (const Case& c : cases) {
    absl::StatusOr<Shapes> shapes = Check(c.make());
    if (c.want.empty()) {
      EXPECT_TRUE(shapes.ok()) << c.name << ": " << shapes.status();
    } else {
      EXPECT_TRUE(absl::IsInvalidArgument(shapes.status())) << c.name;
      EXPECT_EQ(shapes.status().message(), c.want) << c.name;
    }
  }
}

TEST(CheckTrial, OversizedStringsComeFirst) {
  v1::Trial t = Template();
  t.clear_board_kind();
  t.mutable_measure()->set_repeat(-1);
  t.set_board_id(Repeat('b', 129));
  EXPECT_EQ(Check(t).status().message(), "board_id: 129 bytes, at most 128");
}

TEST(CheckTrial, ReturnsTheShapes) {
  EXPECT_EQ(*Check(Template()), (Shapes{{8, 8}, {8, 8}, {8, 8}}));
  v1::Trial defaults = Template();
  defaults.clear_args();
  EXPECT_EQ(*Check(defaults), (Shapes{{32, 32}, {32, 32}, {32, 32}}));  // matmul's default dims
  EXPECT_EQ(*Check(CSource()), (Shapes{{4}, {4}}));
  // The finder is asked only for a template trial whose own fields passed, and its error is the
  // trial's.
  int asked = 0;
  auto unknown = [&asked](const v1::TemplateOperator&) -> absl::StatusOr<const v1::OpTemplate*> {
    ++asked;
    return absl::InvalidArgumentError("op.template_op.version: no such version");
  };
  EXPECT_EQ(CheckTrial(Template(), unknown).status().message(),
            "op.template_op.version: no such version");
  EXPECT_TRUE(CheckTrial(CSource(), unknown).ok());
  v1::Trial too_many = Template();
  while (too_many.args_size() <= kMaxArgs) too_many.add_args()->add_shape(1);
  EXPECT_FALSE(CheckTrial(too_many, unknown).ok());
  EXPECT_EQ(asked, 1);
}

TEST(TrialShapes, AreCheckedAgainstTheOp) {
  auto with_shapes = [](Shapes shapes, const std::string& dtype = "") {
    v1::Trial t;
    for (const auto& s : shapes) {
      v1::ArgSpec* a = t.add_args();
      for (int64_t d : s) a->add_shape(d);
      a->set_dtype(dtype);
    }
    return t;
  };
  const v1::OpTemplate& mm = BuiltinKnobSpace().Find("matmul")->spec();
  EXPECT_EQ(*TrialShapes(mm, v1::Trial()), (Shapes{{32, 32}, {32, 32}, {32, 32}}));
  EXPECT_TRUE(TrialShapes(mm, with_shapes({{8, 4}, {4, 2}, {8, 2}})).ok());
  EXPECT_THAT(TrialShapes(mm, with_shapes({{8, 4}, {5, 2}, {8, 2}})).status().message(),
              HasSubstr("args[1].shape[0]: K is 4 in args[0], 5 here"));
  EXPECT_THAT(TrialShapes(mm, with_shapes({{8, 4}, {4, 2}, {8, 3}})).status().message(),
              HasSubstr("args[2].shape[1]: N is 2 in args[1], 3 here"));
  EXPECT_THAT(TrialShapes(mm, with_shapes({{8, 4}, {4, 2}})).status().message(),
              HasSubstr("args: matmul takes 3 arguments, the trial gives 2"));
  EXPECT_THAT(TrialShapes(mm, with_shapes({{8, 4}, {4}, {8, 2}})).status().message(),
              HasSubstr("args[1].shape"));
  EXPECT_THAT(TrialShapes(mm, with_shapes({{8, 4}, {4, 2}, {8, 2}}, "int8")).status().message(),
              HasSubstr("args[0].dtype"));
  const v1::OpTemplate& conv = BuiltinKnobSpace().Find("conv2d")->spec();
  EXPECT_TRUE(TrialShapes(conv, with_shapes({{1, 4, 16, 16}, {8, 4, 3, 3}, {1, 8, 14, 14}})).ok());
  EXPECT_THAT(TrialShapes(conv, with_shapes({{1, 4, 16, 16}, {8, 4, 3, 3}, {1, 8, 16, 16}}))
                  .status()
                  .message(),
              HasSubstr("args[2].shape[2]: OH = H - KH + 1 is 14, the trial gives 16"));
  const v1::OpTemplate& add = BuiltinKnobSpace().Find("add")->spec();
  EXPECT_TRUE(TrialShapes(add, with_shapes({{4, 4}, {4, 4}, {4, 4}})).ok());
  EXPECT_THAT(TrialShapes(add, with_shapes({{4, 4}, {4, 4}, {16}})).status().message(),
              HasSubstr("args[2].shape: add takes arguments of one shape"));
  absl::StatusOr<TrialArgs> args = TemplateArgs(add, {{4, 4}, {4, 4}, {4, 4}});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->Bytes(false), 3 * 16 * 4);
  EXPECT_EQ(args->Bytes(true), 4 * 16 * 4);  // and the reference's output
  EXPECT_EQ(ShapesText({{8, 4}, {4}}), "8x4,4");
}

TEST(CheckTrial, ArgumentsCarryTheirDtypeRangeAndTheOutputsTolerance) {
  v1::Trial t = CSource();
  t.mutable_args(0)->set_dtype("int8");
  t.mutable_args(1)->set_dtype("int32");
  absl::StatusOr<TrialArgs> args = CheckTrial(t, FindBuiltin);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(DtypeName(args->args[0].dtype), "int8");
  EXPECT_EQ(args->args[0].lo, -128);  // the whole dtype by default
  EXPECT_EQ(args->args[0].hi, 127);
  EXPECT_EQ(args->atol, 0);  // integers: equal
  EXPECT_EQ(args->Bytes(true), 4 + 4 * 4 + 4 * 4);
  t.mutable_args(0)->add_range(-3);
  t.mutable_args(0)->add_range(3);
  args = CheckTrial(t, FindBuiltin);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->args[0].lo, -3);
  EXPECT_EQ(args->args[0].hi, 3);
  // Floats: the defaults by dtype, or the trial's.
  for (const auto& [dtype, tol] :
       {std::pair<const char*, double>{"float16", 1e-2}, {"float32", 1e-4}, {"float64", 1e-9}}) {
    v1::Trial f = CSource();
    f.mutable_args(1)->set_dtype(dtype);
    args = CheckTrial(f, FindBuiltin);
    ASSERT_TRUE(args.ok()) << args.status();
    EXPECT_EQ(args->atol, tol) << dtype;
    EXPECT_EQ(args->rtol, tol) << dtype;
    EXPECT_EQ(args->args[0].lo, -1);
  }
  v1::Trial f = CSource();
  f.mutable_op()->set_atol(0.5);
  args = CheckTrial(f, FindBuiltin);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->atol, 0.5);
  EXPECT_EQ(args->rtol, 1e-4);
  // A template operator: its manifest's dtypes (the built-ins are float32).
  args = CheckTrial(Template(), FindBuiltin);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(DtypeName(args->args[2].dtype), "float32");
  EXPECT_EQ(args->atol, 1e-4);
}

TEST(EffectiveMeasure, DefaultsAreTheProtosDocumentedOnes) {
  const EffectiveMeasureOptions none = EffectiveMeasure(v1::MeasureOptions());
  EXPECT_EQ(none.number, 10);
  EXPECT_EQ(none.repeat, 1);
  EXPECT_EQ(none.min_repeat_ms, 0);
  EXPECT_EQ(none.cooldown_ms, 0);
  EXPECT_EQ(none.timeout, absl::Seconds(10));
  EXPECT_FALSE(none.adaptive());
  EXPECT_EQ(none.budget, absl::Seconds(5));  // half the timeout
  EXPECT_EQ(none.max_repeat, 200);
  EXPECT_EQ(none.max_costs(), 1);

  v1::MeasureOptions m;
  m.set_number(3);
  m.set_repeat(7);
  m.set_min_repeat_ms(20);
  m.set_cooldown_ms(5);
  m.set_timeout_ms(3001);
  const EffectiveMeasureOptions fixed = EffectiveMeasure(m);
  EXPECT_EQ(fixed.number, 3);
  EXPECT_EQ(fixed.repeat, 7);
  EXPECT_EQ(fixed.min_repeat_ms, 20);
  EXPECT_EQ(fixed.cooldown_ms, 5);
  EXPECT_EQ(fixed.timeout, absl::Milliseconds(3001));
  EXPECT_EQ(fixed.budget, absl::Microseconds(1500500));
  EXPECT_EQ(fixed.max_costs(), 7);
  m.set_repeat(5000);  // more than the contract allows: at most kMaxCosts costs
  EXPECT_EQ(EffectiveMeasure(m).max_costs(), kMaxCosts);

  m.set_target_rel_ci(0.01);
  const EffectiveMeasureOptions adaptive = EffectiveMeasure(m);
  EXPECT_TRUE(adaptive.adaptive());
  EXPECT_EQ(adaptive.max_costs(), 200);  // max_repeat's default, not repeat
  m.set_max_repeat(50);
  m.set_budget_ms(300);
  EXPECT_EQ(EffectiveMeasure(m).max_costs(), 50);
  EXPECT_EQ(EffectiveMeasure(m).budget, absl::Milliseconds(300));
  m.set_max_repeat(5000);
  EXPECT_EQ(EffectiveMeasure(m).max_repeat, kMaxCosts);

  v1::MeasureOptions negative;  // refused at submission; the agent measures with the defaults
  negative.set_number(-1);
  negative.set_repeat(-1);
  negative.set_min_repeat_ms(-1);
  negative.set_cooldown_ms(-1);
  negative.set_timeout_ms(-1);
  const EffectiveMeasureOptions e = EffectiveMeasure(negative);
  EXPECT_EQ(e.number, 10);
  EXPECT_EQ(e.repeat, 1);
  EXPECT_EQ(e.min_repeat_ms, 0);
  EXPECT_EQ(e.cooldown_ms, 0);
  EXPECT_EQ(e.timeout, absl::Seconds(10));
}

}  // namespace
}  // namespace benchfarm::catalog
