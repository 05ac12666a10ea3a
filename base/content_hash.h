// Content hashes: FNV-1a 64-bit over bytes (an image, an operator's files), written as 16
// lowercase hex digits.
//
// This is exactly what the host-process board (crt/host/board.c, HashFile) reports as
// benchfarm.DeviceInfo.firmware_hash for its own executable, and what the agent computes for an
// image it built, so "does the board already run this image?" is a string comparison. It is a
// cache key and a staleness check, not a security measure: FNV-1a is not collision resistant.

#ifndef BENCHFARM_BASE_CONTENT_HASH_H_
#define BENCHFARM_BASE_CONTENT_HASH_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace benchfarm::base {

// The hash of `data`, e.g. "cbf29ce484222325" for no bytes. Thread-safe.
std::string HashBytes(absl::string_view data);

// The hash of the file at `path` (symbolic links followed), read in 64 KiB chunks. Thread-safe.
// Errors (every message names the path):
//   NotFound            the file does not exist (ENOENT, ENOTDIR).
//   PermissionDenied    it cannot be opened for reading (EACCES, EPERM).
//   FailedPrecondition  it is not a regular file (a directory, a device, a FIFO).
//   Internal            any other open(), fstat() or read() error, with the OS's text.
absl::StatusOr<std::string> HashFile(const std::string& path);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_CONTENT_HASH_H_
