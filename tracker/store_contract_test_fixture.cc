#include "tracker/store_contract_test_fixture.h"

#include <sqlite3.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/postgres_server.h"
#include "tracker/pg_store.h"
#include "tracker/sqlite_store.h"
#include "tracker/store_test_util.h"

namespace benchfarm::tracker {
namespace {

class SqliteBackend : public Backend {
 public:
  SqliteBackend() : path_(TestDir() + "/store.db") {}

  absl::StatusOr<std::unique_ptr<Store>> Open() override {
    absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path_);
    if (!store.ok()) return store.status();
    return std::unique_ptr<Store>(*std::move(store));
  }

  absl::Status Exec(const std::string& sql) override {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
    absl::Status status = rc == SQLITE_OK
                              ? absl::OkStatus()
                              : absl::InternalError(absl::StrCat(sql, ": ", sqlite3_errmsg(db)));
    sqlite3_close_v2(db);
    return status;
  }

 private:
  const std::string path_;
};

class PostgresBackend : public Backend {
 public:
  // On a new database of the binary's shared server.
  static absl::StatusOr<std::unique_ptr<Backend>> Make() {
    absl::StatusOr<benchfarm::testing::PostgresServer*> server =
        benchfarm::testing::SharedPostgresServer();
    if (!server.ok()) return server.status();
    static int databases = 0;
    const std::string dbname = absl::StrCat("contract_", ++databases);
    absl::StatusOr<std::string> conninfo = (*server)->CreateDatabase(dbname);
    if (!conninfo.ok()) return conninfo.status();
    return std::unique_ptr<Backend>(new PostgresBackend(*server, dbname, *conninfo));
  }

  absl::StatusOr<std::unique_ptr<Store>> Open() override {
    absl::StatusOr<std::unique_ptr<PgStore>> store = PgStore::Open(conninfo_);
    if (!store.ok()) return store.status();
    return std::unique_ptr<Store>(*std::move(store));
  }

  absl::Status Exec(const std::string& sql) override {
    return server_->Query(dbname_, sql).status();
  }

 private:
  PostgresBackend(benchfarm::testing::PostgresServer* server, std::string dbname,
                  std::string conninfo)
      : server_(server), dbname_(std::move(dbname)), conninfo_(std::move(conninfo)) {}

  benchfarm::testing::PostgresServer* const server_;
  const std::string dbname_;
  const std::string conninfo_;
};

}  // namespace

void StoreContractTest::SetUp() {
  if (GetParam() == "sqlite") {
    backend_ = std::make_unique<SqliteBackend>();
  } else {
    absl::StatusOr<std::unique_ptr<Backend>> backend = PostgresBackend::Make();
    ASSERT_TRUE(backend.ok()) << "PostgreSQL is needed for this test: " << backend.status();
    backend_ = *std::move(backend);
  }
  Reopen();
}

void StoreContractTest::Reopen() {
  store_.reset();
  absl::StatusOr<std::unique_ptr<Store>> store = backend_->Open();
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = *std::move(store);
}

std::string BackendName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

}  // namespace benchfarm::tracker
