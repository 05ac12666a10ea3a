// What the Store contract tests share (tests only): StoreContractTest, a fresh store per test on
// the backend its parameter names — "sqlite" (SqliteStore on a file of its own) or "postgres"
// (PgStore on a database of its own of one real PostgreSQL 15 server started per binary,
// tests/postgres_server.h). A backend that cannot be set up fails its tests with the reason.

#ifndef BENCHFARM_TRACKER_STORE_CONTRACT_TEST_FIXTURE_H_
#define BENCHFARM_TRACKER_STORE_CONTRACT_TEST_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "tracker/store.h"

namespace benchfarm::tracker {

// What the contract tests compare with.
using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A store to test and what the tests need beside it.
class Backend {
 public:
  virtual ~Backend() = default;
  // A new, empty store (at the first call) or the same one again.
  virtual absl::StatusOr<std::unique_ptr<Store>> Open() = 0;
  // Runs SQL on the store's database over a connection of its own.
  virtual absl::Status Exec(const std::string& sql) = 0;
};

class StoreContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;

  // Closes the store and opens it again.
  void Reopen();

  Store& store() { return *store_; }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Store> store_;
};

// The parameter, as the name of an instantiation's tests: "Backends/Suite.Case/sqlite".
std::string BackendName(const ::testing::TestParamInfo<std::string>& info);

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_STORE_CONTRACT_TEST_FIXTURE_H_
