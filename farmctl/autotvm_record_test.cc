// AutoTVM records: the exact layout of tvm.autotvm.record.encode (log version 0.2) for successful
// and failed jobs, the knob entity and config index, and JSON numbers and strings.
#include "farmctl/autotvm_record.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

#include "catalog/operator.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"

namespace benchfarm::farmctl {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;
using google::protobuf::util::TimeUtil;

v1::Job MatmulJob() {
  v1::Job job;
  job.set_job_id("j-1");
  job.set_state(v1::DONE);
  v1::Trial* t = job.mutable_trial();
  t->set_board_kind("nucleo-f746zg");
  v1::TemplateOperator* op = t->mutable_op()->mutable_template_op();
  op->set_op("matmul");
  (*op->mutable_knobs())["tile_m"] = "4";
  (*op->mutable_knobs())["tile_n"] = "8";
  (*op->mutable_knobs())["order"] = "ijk";
  for (int i = 0; i < 3; ++i) {
    v1::ArgSpec* a = t->add_args();
    a->add_shape(16);
    a->add_shape(32);
    if (i < 2) a->set_dtype("float32");  // the output leaves dtype empty
  }
  v1::Result* r = job.mutable_result();
  r->add_costs_s(1.25e-4);
  r->add_costs_s(1.5e-4);
  r->mutable_stages()->set_build_s(2);
  r->mutable_stages()->set_flash_s(0.5);
  r->mutable_stages()->set_handshake_s(0.25);
  r->mutable_stages()->set_measure_s(0.125);
  *r->mutable_finished_at() = TimeUtil::SecondsToTimestamp(1700000000);
  r->mutable_finished_at()->set_nanos(500000000);
  return job;
}

Struct Parse(const std::string& line) {
  Struct s;
  auto status = google::protobuf::util::JsonStringToMessage(line, &s);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << line;
  return s;
}

std::set<std::string> Keys(const Struct& s) {
  std::set<std::string> keys;
  for (const auto& [k, v] : s.fields()) keys.insert(k);
  return keys;
}

// The input (target, task, args) is a record's key: versions and shapes never share one.
TEST(FormatAutoTvmRecord, InputNamesVersionAndShapes) {
  auto input = [](const v1::Job& job) {
    Struct record = Parse(FormatAutoTvmRecord(job, catalog::BuiltinKnobSpace(), ""));
    std::string out;
    google::protobuf::util::MessageToJsonString(record.fields().at("input"), &out);
    return out;
  };
  v1::Job v1_job = MatmulJob();
  v1_job.mutable_trial()->mutable_op()->mutable_template_op()->set_version("00000000000000aa");
  v1::Job v2_job = v1_job;
  v2_job.mutable_trial()->mutable_op()->mutable_template_op()->set_version("00000000000000bb");
  v1::Job other_shape = v1_job;
  other_shape.mutable_trial()->mutable_args(0)->set_shape(0, 8);
  v1::Job defaults = v1_job;
  defaults.mutable_trial()->clear_args();
  EXPECT_NE(input(v1_job).find("benchfarm/matmul@00000000000000aa"), std::string::npos)
      << input(v1_job);
  EXPECT_NE(input(v1_job), input(v2_job));
  EXPECT_NE(input(v1_job), input(other_shape));
  // No args: the op's default shapes (32x32 each), not an empty list.
  EXPECT_NE(input(defaults).find("[\"TENSOR\",[32,32],\"float32\"]"), std::string::npos)
      << input(defaults);
}

TEST(FormatAutoTvmRecord, SuccessfulJob) {
  std::string line = FormatAutoTvmRecord(MatmulJob(), catalog::BuiltinKnobSpace(), "cortex-m7");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  // Key order as record.encode writes it.
  size_t input = line.find("\"input\""), config = line.find("\"config\""),
         result = line.find("\"result\""), version = line.find("\"version\""),
         tvm_version = line.find("\"tvm_version\"");
  EXPECT_LT(input, config);
  EXPECT_LT(config, result);
  EXPECT_LT(result, version);
  EXPECT_LT(version, tvm_version);
  EXPECT_NE(tvm_version, std::string::npos);

  Struct record = Parse(line);
  EXPECT_EQ(Keys(record),
            (std::set<std::string>{"input", "config", "result", "version", "tvm_version"}));
  EXPECT_EQ(record.fields().at("version").number_value(), 0.2);
  EXPECT_EQ(record.fields().at("tvm_version").string_value(), "0.18.0");

  const auto& in = record.fields().at("input").list_value();
  ASSERT_EQ(in.values_size(), 4);
  // microTVM's target for the board (tvm.target.target.micro("stm32f746xx")), its kind as -model.
  EXPECT_EQ(in.values(0).string_value(),
            "c -keys=arm_cpu,cpu -mcpu=cortex-m7 -model=nucleo-f746zg");
  EXPECT_EQ(in.values(1).string_value(), "benchfarm/matmul");
  ASSERT_EQ(in.values(2).list_value().values_size(), 3);
  const auto& arg = in.values(2).list_value().values(2).list_value();
  EXPECT_EQ(arg.values(0).string_value(), "TENSOR");
  EXPECT_EQ(arg.values(1).list_value().values(1).number_value(), 32);
  EXPECT_EQ(arg.values(2).string_value(), "float32");
  EXPECT_EQ(in.values(3).struct_value().fields_size(), 0);

  const Struct& cfg = record.fields().at("config").struct_value();
  EXPECT_EQ(Keys(cfg), (std::set<std::string>{"index", "code_hash", "entity"}));
  EXPECT_EQ(cfg.fields().at("code_hash").kind_case(), Value::kNullValue);
  // tile_m=4 (2), tile_n=8 (3), tile_k default 16 (4), unroll default 4 (2), order ijk (0).
  EXPECT_EQ(cfg.fields().at("index").number_value(), 2 + 3 * 6 + 4 * 36 + 2 * 216 + 0 * 864);
  const auto& entity = cfg.fields().at("entity").list_value();
  ASSERT_EQ(entity.values_size(), 5);
  const char* names[] = {"tile_m", "tile_n", "tile_k", "unroll", "order"};
  for (int i = 0; i < 5; ++i) {
    const auto& knob = entity.values(i).list_value();
    ASSERT_EQ(knob.values_size(), 3);
    EXPECT_EQ(knob.values(0).string_value(), names[i]);
    EXPECT_EQ(knob.values(1).string_value(), "ot");
  }
  EXPECT_EQ(entity.values(0).list_value().values(2).number_value(), 4);
  EXPECT_EQ(entity.values(2).list_value().values(2).number_value(), 16);
  EXPECT_EQ(entity.values(4).list_value().values(2).string_value(), "ijk");

  const auto& res = record.fields().at("result").list_value();
  ASSERT_EQ(res.values_size(), 4);
  ASSERT_EQ(res.values(0).list_value().values_size(), 2);
  EXPECT_EQ(res.values(0).list_value().values(0).number_value(), 1.25e-4);
  EXPECT_EQ(res.values(1).number_value(), 0);
  EXPECT_EQ(res.values(2).number_value(), 2.875);
  EXPECT_EQ(res.values(3).number_value(), 1700000000.5);
  EXPECT_NE(line.find("[[0.000125, 0.00015], 0, 2.875, 1700000000.5]"), std::string::npos) << line;
}

TEST(FormatAutoTvmRecord, FailedJobCostsOneBillion) {
  v1::Job job = MatmulJob();
  job.mutable_result()->clear_costs_s();
  job.mutable_result()->set_error_code(v1::WRONG_ANSWER);
  job.mutable_result()->set_autotvm_error_no(5);
  Struct record = Parse(FormatAutoTvmRecord(job, catalog::BuiltinKnobSpace(), ""));
  const auto& res = record.fields().at("result").list_value();
  ASSERT_EQ(res.values(0).list_value().values_size(), 1);
  EXPECT_EQ(res.values(0).list_value().values(0).number_value(), 1e9);
  EXPECT_EQ(res.values(1).number_value(), 5);

  // Costs reported alongside an error are not written; a success without costs is an error.
  job = MatmulJob();
  job.mutable_result()->set_autotvm_error_no(4);
  EXPECT_NE(
      FormatAutoTvmRecord(job, catalog::BuiltinKnobSpace(), "").find("\"result\": [[1e+09], 4,"),
      std::string::npos);
  job = MatmulJob();
  job.mutable_result()->clear_costs_s();
  EXPECT_NE(
      FormatAutoTvmRecord(job, catalog::BuiltinKnobSpace(), "").find("\"result\": [[1e+09], 8,"),
      std::string::npos);
}

TEST(FormatAutoTvmRecord, OpsOutsideTheTable) {
  v1::Job job = MatmulJob();
  v1::TemplateOperator* op = job.mutable_trial()->mutable_op()->mutable_template_op();
  op->set_op("softmax");
  op->clear_knobs();
  (*op->mutable_knobs())["vec"] = "4";
  (*op->mutable_knobs())["layout"] = "nhwc";
  std::string line = FormatAutoTvmRecord(job, catalog::BuiltinKnobSpace(), "");
  EXPECT_NE(line.find("\"benchfarm/softmax\""), std::string::npos);
  EXPECT_NE(line.find("\"index\": -1, \"code_hash\": null, "
                      "\"entity\": [[\"layout\", \"ot\", \"nhwc\"], [\"vec\", \"ot\", 4]]"),
            std::string::npos)
      << line;

  // A known op with a knob it does not have: listed after the op's own, outside the space.
  job = MatmulJob();
  (*job.mutable_trial()->mutable_op()->mutable_template_op()->mutable_knobs())["extra"] = "1";
  line = FormatAutoTvmRecord(job, catalog::BuiltinKnobSpace(), "");
  EXPECT_NE(line.find("\"index\": -1,"), std::string::npos) << line;
  EXPECT_NE(line.find("[\"order\", \"ot\", \"ijk\"], [\"extra\", \"ot\", 1]]"), std::string::npos)
      << line;
  job = MatmulJob();

  job.mutable_trial()->mutable_op()->set_c_source("int f(void) { return 0; }");
  job.mutable_trial()->mutable_op()->set_entry_function("my_kernel");
  line = FormatAutoTvmRecord(job, catalog::BuiltinKnobSpace(), "");
  EXPECT_NE(line.find("\"benchfarm/c_source/my_kernel\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"entity\": []"), std::string::npos) << line;
  Parse(line);
  // Its compile options are part of its identity.
  job.mutable_trial()->mutable_op()->add_cflags("-O3");
  job.mutable_trial()->mutable_op()->add_cflags("-funroll-loops");
  line = FormatAutoTvmRecord(job, catalog::BuiltinKnobSpace(), "");
  EXPECT_NE(line.find("\"entity\": [[\"cflags\", \"ot\", \"-O3 -funroll-loops\"]]"),
            std::string::npos)
      << line;
  Parse(line);
}

TEST(FormatAutoTvmRecord, TimestampFallsBackToTheLastAttempt) {
  v1::Job job = MatmulJob();
  job.mutable_result()->clear_finished_at();
  *job.add_attempts()->mutable_ended_at() = TimeUtil::SecondsToTimestamp(1600000000);
  Struct record = Parse(FormatAutoTvmRecord(job, catalog::BuiltinKnobSpace(), ""));
  EXPECT_EQ(record.fields().at("result").list_value().values(3).number_value(), 1600000000);
}

// AutoTVM target per core: microTVM's form for a board with a core, the plain C target for one
// without; records of two cores of the same operator and shapes never share a key.
TEST(AutoTvmTarget, PerCore) {
  EXPECT_EQ(AutoTvmTarget("qemu-mps2-an385", "cortex-m3"),
            "c -keys=arm_cpu,cpu -mcpu=cortex-m3 -model=qemu-mps2-an385");
  EXPECT_EQ(AutoTvmTarget("stm32f4", "cortex-m4"),
            "c -keys=arm_cpu,cpu -mcpu=cortex-m4 -model=stm32f4");
  EXPECT_EQ(AutoTvmTarget("qemu-mps3-an547", "cortex-m55"),
            "c -keys=arm_cpu,cpu -mcpu=cortex-m55 -model=qemu-mps3-an547");
  EXPECT_EQ(AutoTvmTarget("host-process", ""), "c -keys=cpu -model=host-process");

  v1::Job m3 = MatmulJob(), m4 = MatmulJob();
  m3.mutable_trial()->set_board_kind("qemu-mps2-an385");
  m4.mutable_trial()->set_board_kind("qemu-netduinoplus2");
  auto input = [](const v1::Job& job, const std::string& cpu) {
    const Struct record = Parse(FormatAutoTvmRecord(job, catalog::BuiltinKnobSpace(), cpu));
    return record.fields().at("input").list_value();
  };
  EXPECT_EQ(input(m3, "cortex-m3").values(0).string_value(),
            "c -keys=arm_cpu,cpu -mcpu=cortex-m3 -model=qemu-mps2-an385");
  EXPECT_EQ(input(m4, "cortex-m4").values(0).string_value(),
            "c -keys=arm_cpu,cpu -mcpu=cortex-m4 -model=qemu-netduinoplus2");
  // Task and arguments alike: only the target tells the cores apart.
  EXPECT_EQ(input(m3, "cortex-m3").values(1).string_value(),
            input(m4, "cortex-m4").values(1).string_value());
  EXPECT_NE(input(m3, "cortex-m3").values(0).string_value(),
            input(m4, "cortex-m4").values(0).string_value());
}

TEST(AutoTvmTarget, ParsedAndComparedByKindAndCore) {
  AutoTvmTargetParts p = ParseAutoTvmTarget("c -keys=arm_cpu,cpu -mcpu=cortex-m3 -model=m3kind");
  EXPECT_EQ(p.model, "m3kind");
  EXPECT_EQ(p.cpu, "cortex-m3");
  p = ParseAutoTvmTarget("c -keys=cpu -model=host-process");
  EXPECT_EQ(p.model, "host-process");
  EXPECT_EQ(p.cpu, "");

  const std::string m3 = AutoTvmTarget("k", "cortex-m3"), m4 = AutoTvmTarget("k", "cortex-m4");
  EXPECT_TRUE(SameBoardTarget(m3, m3));
  EXPECT_FALSE(SameBoardTarget(m3, m4));  // another core: another run
  EXPECT_FALSE(SameBoardTarget(m3, AutoTvmTarget("other", "cortex-m3")));
  // A record written before targets named cores ("c -keys=cpu -model=k") is the kind's.
  EXPECT_TRUE(SameBoardTarget("c -keys=cpu -model=k", m3));
  EXPECT_TRUE(SameBoardTarget(m4, "c -keys=cpu -model=k"));
  EXPECT_FALSE(SameBoardTarget("c -keys=cpu -model=other", m3));
}

v1::Board Board(const std::string& id, const std::string& kind, const std::string& cpu,
                v1::BoardState state = v1::IDLE) {
  v1::Board b;
  b.set_board_id(id);
  b.set_kind(kind);
  b.set_cpu(cpu);
  b.set_state(state);
  return b;
}

TEST(CoresOfBoards, OneCorePerKind) {
  google::protobuf::RepeatedPtrField<v1::Board> boards;
  *boards.Add() = Board("m3-0", "qemu-mps2-an385", "cortex-m3");
  *boards.Add() = Board("m3-1", "qemu-mps2-an385", "cortex-m3", v1::OFFLINE);
  *boards.Add() = Board("m3-old", "qemu-mps2-an385", "");  // an agent older than Board.cpu
  *boards.Add() = Board("hp-0", "host-process", "");
  // A kind re-based on another package: its serving board decides, not the stale offline one.
  *boards.Add() = Board("x-old", "rebased", "cortex-m3", v1::OFFLINE);
  *boards.Add() = Board("x-new", "rebased", "cortex-m4", v1::BUSY);
  absl::StatusOr<BoardCores> cores = CoresOfBoards(boards);
  ASSERT_TRUE(cores.ok()) << cores.status();
  EXPECT_EQ(*cores,
            (BoardCores{
                {"qemu-mps2-an385", "cortex-m3"}, {"host-process", ""}, {"rebased", "cortex-m4"}}));

  // Offline boards alone: theirs.
  google::protobuf::RepeatedPtrField<v1::Board> offline;
  *offline.Add() = Board("m3-0", "qemu-mps2-an385", "cortex-m3", v1::OFFLINE);
  cores = CoresOfBoards(offline);
  ASSERT_TRUE(cores.ok()) << cores.status();
  EXPECT_EQ(cores->at("qemu-mps2-an385"), "cortex-m3");

  // Two serving cores in one kind: no target can name both.
  *boards.Add() = Board("x-m7", "rebased", "cortex-m7", v1::IDLE);
  cores = CoresOfBoards(boards);
  ASSERT_FALSE(cores.ok());
  EXPECT_EQ(cores.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(cores.status().message().find(
                "board kind rebased: its boards name different cores: cortex-m4 (x-new); "
                "cortex-m7 (x-m7)"),
            std::string::npos)
      << cores.status();
}

TEST(JsonDouble, ShortestRoundTrip) {
  EXPECT_EQ(JsonDouble(1e9), "1e+09");
  EXPECT_EQ(JsonDouble(0.1), "0.1");
  EXPECT_EQ(JsonDouble(1.25e-4), "0.000125");
  EXPECT_EQ(JsonDouble(0), "0");
  EXPECT_EQ(JsonDouble(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(JsonDouble(std::numeric_limits<double>::infinity()), "1e+09");
}

}  // namespace
}  // namespace benchfarm::farmctl
