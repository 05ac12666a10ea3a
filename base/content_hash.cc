// FNV-1a 64: the same constants, byte order and "%016llx" formatting as crt/host/board.c.

#include "base/content_hash.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/os_error.h"

namespace benchfarm::base {
namespace {

constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;
constexpr size_t kChunkBytes = 64 * 1024;

uint64_t Update(uint64_t h, const unsigned char* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= data[i];
    h *= kFnvPrime;
  }
  return h;
}

std::string Hex(uint64_t h) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64, h);
  return std::string(hex, 16);
}

}  // namespace

std::string HashBytes(absl::string_view data) {
  return Hex(
      Update(kFnvOffsetBasis, reinterpret_cast<const unsigned char*>(data.data()), data.size()));
}

absl::StatusOr<std::string> HashFile(const std::string& path) {
  int fd;
  do {
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    const std::string message = absl::StrCat("hash ", path);
    if (err == ENOENT || err == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat(message, ": ", ErrnoText(err)));
    }
    if (err == EACCES || err == EPERM) {
      return absl::PermissionDeniedError(absl::StrCat(message, ": ", ErrnoText(err)));
    }
    return absl::InternalError(absl::StrCat(message, ": open: ", ErrnoText(err)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("hash ", path, ": fstat: ", ErrnoText(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat("hash ", path, ": not a regular file"));
  }
  std::vector<unsigned char> buf(kChunkBytes);
  uint64_t h = kFnvOffsetBasis;
  for (;;) {
    const ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("hash ", path, ": read: ", ErrnoText(err)));
    }
    if (n == 0) break;
    h = Update(h, buf.data(), static_cast<size_t>(n));
  }
  close(fd);
  return Hex(h);
}

}  // namespace benchfarm::base
