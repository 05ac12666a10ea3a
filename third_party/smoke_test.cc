// Links every Debian library wrapper in //third_party and uses each for real:
// a gRPC call through generated code on a loopback port, Abseil status and
// strings, an SQLite database file in WAL mode, a Prometheus text exposition,
// libserialport's port enumeration and an spdlog logger (the compiled library).
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "libserialport.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "third_party/smoke.grpc.pb.h"

namespace {

class EchoService final : public benchfarm::smoke::Smoke::Service {
  grpc::Status Ping(grpc::ServerContext*, const benchfarm::smoke::PingRequest* request,
                    benchfarm::smoke::PingReply* reply) override {
    reply->set_text(absl::StrCat("pong: ", request->text()));
    return grpc::Status::OK;
  }
};

TEST(ThirdParty, GrpcRoundTripThroughGeneratedCode) {
  EchoService service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);

  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
  auto stub = benchfarm::smoke::Smoke::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  benchfarm::smoke::PingRequest request;
  request.set_text("hello");
  request.mutable_delay()->set_seconds(1);
  benchfarm::smoke::PingReply reply;
  grpc::Status status = stub->Ping(&context, request, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(reply.text(), "pong: hello");
  server->Shutdown();
}

TEST(ThirdParty, AbseilStatusOr) {
  absl::StatusOr<int> value = absl::NotFoundError("board 7");
  EXPECT_EQ(value.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(value.status().message()), testing::HasSubstr("board 7"));
}

TEST(ThirdParty, SqliteFileInWalMode) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string path = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/smoke.db");
  unlink(path.c_str());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE t(x INTEGER);"
                             "INSERT INTO t VALUES (41), (1);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT SUM(x) FROM t", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 42);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST(ThirdParty, PrometheusTextExposition) {
  prometheus::Registry registry;
  auto& family = prometheus::BuildCounter().Name("smoke_total").Help("smoke").Register(registry);
  family.Add({{"board", "b1"}}).Increment(3);
  std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  EXPECT_THAT(text, testing::HasSubstr("smoke_total{board=\"b1\"} 3"));
}

TEST(ThirdParty, SerialPortEnumerationAnswers) {
  struct sp_port** ports = nullptr;
  // With no USB-serial adapters attached the list may be empty; the call must still succeed.
  ASSERT_EQ(sp_list_ports(&ports), SP_OK);
  sp_free_port_list(ports);
  struct sp_port* port = nullptr;
  EXPECT_NE(sp_get_port_by_name("/dev/benchfarm-no-such-port", &port), SP_OK);
}

TEST(ThirdParty, SpdlogFormatsThroughTheCompiledLibrary) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("smoke", sink);
  logger.set_pattern("%l %n: %v");
  logger.info("board {} answered in {:.1f} ms", "b1", 2.5);
  logger.debug("below the default level");
  EXPECT_EQ(out.str(), "info smoke: board b1 answered in 2.5 ms\n");
}

}  // namespace
