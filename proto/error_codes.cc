// ErrorCode helpers: see error_codes.h.
#include "proto/error_codes.h"

namespace benchfarm {

int ToAutoTvmErrorNo(v1::ErrorCode code) {
  switch (code) {
    case v1::NO_ERROR:
    case v1::INSTANTIATION_ERROR:
    case v1::COMPILE_HOST:
    case v1::COMPILE_DEVICE:
    case v1::RUNTIME_DEVICE:
    case v1::WRONG_ANSWER:
    case v1::BUILD_TIMEOUT:
    case v1::RUN_TIMEOUT:
    case v1::UNKNOWN_ERROR:
      return static_cast<int>(code);
    case v1::FLASH_ERROR:
    case v1::SESSION_ERROR:
    case v1::DEVICE_RESET:
    case v1::FIRMWARE_MISMATCH:
    case v1::CALIBRATION_ERROR:
      return v1::RUNTIME_DEVICE;
    case v1::BOARD_LOST:
      return v1::RUN_TIMEOUT;
    case v1::CANCELLED:
      return v1::UNKNOWN_ERROR;
    default:
      return v1::UNKNOWN_ERROR;
  }
}

bool IsInfrastructureError(v1::ErrorCode code) {
  switch (code) {
    case v1::FLASH_ERROR:
    case v1::SESSION_ERROR:
    case v1::BOARD_LOST:
    case v1::FIRMWARE_MISMATCH:
    case v1::CALIBRATION_ERROR:
      return true;
    default:
      return false;
  }
}

}  // namespace benchfarm
