// For postgres_server_test: starts a PostgresServer, prints "port N" on stdout and waits to be
// killed — a test process that dies with its server running.

#include <unistd.h>

#include <iostream>

#include "tests/postgres_server.h"

int main() {
  auto server = benchfarm::testing::PostgresServer::Start();
  if (!server.ok()) {
    std::cout << "error " << server.status() << std::endl;
    return 1;
  }
  // The parent removes the directory: this process is killed, its destructor never runs.
  std::cout << "port " << (*server)->port() << " " << (*server)->data_dir() << std::endl;
  for (;;) pause();
}
