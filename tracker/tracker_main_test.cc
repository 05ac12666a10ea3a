// The tracker daemon as a process: the real //tracker:tracker binary (from the test's runfiles)
// started on a fresh database and 127.0.0.1:0 answers gRPC server reflection, listing benchfarm's
// services, and the standard health service reports SERVING; SIGTERM stops it cleanly.
//
// Debian ships neither reflection.proto nor health.proto (only the server side of both, inside
// libgrpc++), so the client speaks them through grpc::GenericStub, building and reading the
// messages in protobuf's wire format with UnknownFieldSet.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/process_exit.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "tests/tracker_process.h"

namespace benchfarm {
namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

std::chrono::system_clock::time_point In(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(d);
}

grpc::ByteBuffer ToByteBuffer(const UnknownFieldSet& message) {
  std::string bytes;
  message.SerializeToString(&bytes);
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

bool FromByteBuffer(const grpc::ByteBuffer& buffer, UnknownFieldSet* message) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return false;
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return message->ParseFromString(bytes);
}

// Waits for the completion queue to hand back `tag`; returns its ok flag (false on timeout).
bool Await(grpc::CompletionQueue* cq, void* tag) {
  void* got = nullptr;
  bool ok = false;
  if (cq->AsyncNext(&got, &ok, In(absl::Seconds(10))) != grpc::CompletionQueue::GOT_EVENT) {
    return false;
  }
  EXPECT_EQ(got, tag);
  return ok && got == tag;
}

void Drain(grpc::CompletionQueue* cq) {
  cq->Shutdown();
  void* got;
  bool ok;
  while (cq->Next(&got, &ok)) {
  }
}

class TrackerMainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string database = absl::StrCat(std::getenv("TEST_TMPDIR"), "/tracker_main_test.db");
    std::remove(database.c_str());
    absl::StatusOr<std::string> address = tracker_.Start(
        {"--database=" + database, "--listen=127.0.0.1:0", "--metrics=off", "--insecure"});
    ASSERT_TRUE(address.ok()) << address.status();
    address_ = *address;
    channel_ = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
  }

  testing::TrackerProcess tracker_;
  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(TrackerMainTest, ReflectionListsTheServices) {
  // ServerReflectionRequest { list_services = 7: "*" } on the v1alpha service (gRPC 1.51).
  UnknownFieldSet request;
  request.AddLengthDelimited(7, "*");
  grpc::GenericStub stub(channel_);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(In(absl::Seconds(10)));
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = stub.PrepareCall(
      &context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  int start = 0, write = 0, writes_done = 0, read = 0, read_end = 0, finish = 0;
  call->StartCall(&start);
  ASSERT_TRUE(Await(&cq, &start));
  call->Write(ToByteBuffer(request), &write);
  ASSERT_TRUE(Await(&cq, &write));
  call->WritesDone(&writes_done);
  ASSERT_TRUE(Await(&cq, &writes_done));
  grpc::ByteBuffer response_buffer;
  call->Read(&response_buffer, &read);
  ASSERT_TRUE(Await(&cq, &read));
  grpc::ByteBuffer ignored;
  call->Read(&ignored, &read_end);
  EXPECT_FALSE(Await(&cq, &read_end));  // one request, one response, then the end
  grpc::Status status;
  call->Finish(&status, &finish);
  ASSERT_TRUE(Await(&cq, &finish));
  EXPECT_TRUE(status.ok()) << status.error_message();
  Drain(&cq);

  // ServerReflectionResponse { list_services_response = 6 { service = 1 { name = 1 } } }.
  UnknownFieldSet response;
  ASSERT_TRUE(FromByteBuffer(response_buffer, &response));
  std::set<std::string> services;
  bool listed = false;
  for (int i = 0; i < response.field_count(); ++i) {
    const UnknownField& field = response.field(i);
    ASSERT_NE(field.number(), 7) << "error_response";
    if (field.number() != 6 || field.type() != UnknownField::TYPE_LENGTH_DELIMITED) continue;
    listed = true;
    UnknownFieldSet list;
    ASSERT_TRUE(list.ParseFromString(field.length_delimited()));
    for (int j = 0; j < list.field_count(); ++j) {
      if (list.field(j).number() != 1) continue;
      UnknownFieldSet service;
      ASSERT_TRUE(service.ParseFromString(list.field(j).length_delimited()));
      for (int k = 0; k < service.field_count(); ++k) {
        if (service.field(k).number() == 1) services.insert(service.field(k).length_delimited());
      }
    }
  }
  ASSERT_TRUE(listed) << "no list_services_response";
  EXPECT_EQ(services.count("benchfarm.v1.Tracker"), 1u);
  EXPECT_EQ(services.count("benchfarm.v1.TrackerAgent"), 1u);
  EXPECT_EQ(services.count("grpc.health.v1.Health"), 1u);
  EXPECT_EQ(services.count("grpc.reflection.v1alpha.ServerReflection"), 1u);

  absl::StatusOr<base::ProcessExit> stopped = tracker_.Stop();
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->exit_code, 0) << stopped->ToString();
}

TEST_F(TrackerMainTest, HealthServiceAnswersServing) {
  // HealthCheckRequest { service = 1: "" } is the empty message; the answer is
  // HealthCheckResponse { status = 1: SERVING (1) }.
  grpc::GenericStub stub(channel_);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(In(absl::Seconds(10)));
  UnknownFieldSet request;
  grpc::ByteBuffer response_buffer;
  grpc::Status status;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", ToByteBuffer(request), &cq);
  call->StartCall();
  int finish = 0;
  call->Finish(&response_buffer, &status, &finish);
  ASSERT_TRUE(Await(&cq, &finish));
  ASSERT_TRUE(status.ok()) << status.error_message();
  Drain(&cq);
  UnknownFieldSet response;
  ASSERT_TRUE(FromByteBuffer(response_buffer, &response));
  ASSERT_EQ(response.field_count(), 1);
  EXPECT_EQ(response.field(0).number(), 1);
  EXPECT_EQ(response.field(0).varint(), 1u);

  absl::StatusOr<base::ProcessExit> stopped = tracker_.Stop();
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->exit_code, 0) << stopped->ToString();
}

}  // namespace
}  // namespace benchfarm
