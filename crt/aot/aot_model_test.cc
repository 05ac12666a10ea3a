// Tests for the AOT micro interface (tvm_micro_runtime.h) and the sample
// model, including the device handed to its operator as resource_handle.

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "benchfarm/sample_model.h"
#include "tvm/runtime/crt/platform/host_device.h"
#include "tvm/runtime/tvm_micro_runtime.h"

extern "C" int crt_aot_headers_compile_as_c(void);

namespace {

using Input = std::array<float, BENCHFARM_SAMPLE_MODEL_INPUTS>;
using Output = std::array<float, BENCHFARM_SAMPLE_MODEL_OUTPUTS>;

// y = relu(W x + b) in double, straight from the exported constants.
Output Reference(const Input& x) {
  Output y;
  for (int i = 0; i < BENCHFARM_SAMPLE_MODEL_OUTPUTS; ++i) {
    double acc = benchfarm_sample_model_bias[i];
    for (int j = 0; j < BENCHFARM_SAMPLE_MODEL_INPUTS; ++j) {
      acc += static_cast<double>(benchfarm_sample_model_weights[i][j]) * x[j];
    }
    y[i] = static_cast<float>(acc > 0 ? acc : 0);
  }
  return y;
}

// An application's setup: one workspace sized from the model, one Open host device.
class SampleModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(TVMGetNumWorkspaces(&benchfarm_sample_model), 1u);
    ASSERT_EQ(TVMGetNumDevices(&benchfarm_sample_model), 1u);
    workspace_.assign(TVMGetWorkspaceSize(&benchfarm_sample_model, 0) / sizeof(float), -1.0f);
    workspaces_[0] = workspace_.data();
    TVMSetWorkspaces(&context_, workspaces_);
    ASSERT_EQ(TVMDeviceInit(&device_), kTvmErrorNoError);
    ASSERT_EQ(TVMDevicePlatformBindHost(&device_, &host_), kTvmErrorNoError);
    ASSERT_EQ(TVMDeviceOpen(&device_), kTvmErrorNoError);
    TVMSetDevices(&context_, &device_);
  }

  void TearDown() override {
    EXPECT_EQ(TVMDeviceClose(&device_), kTvmErrorNoError);
    EXPECT_EQ(TVMDeviceDestroy(&device_), kTvmErrorNoError);
  }

  int32_t Run(Input& x, Output& y) {
    void* inputs[] = {x.data()};
    void* outputs[] = {y.data()};
    return TVMExecute(&benchfarm_sample_model, inputs, outputs, &context_);
  }

  std::vector<float> workspace_;
  void* workspaces_[1] = {nullptr};
  TVMContext context_ = {};
  tvm_device_t device_ = {};
  tvm_device_host_t host_ = {};
};

TEST(AotModel, HeadersCompileAsC) { EXPECT_EQ(crt_aot_headers_compile_as_c(), 0); }

TEST(AotModel, DescriptorAccessors) {
  EXPECT_EQ(TVMGetNumInputTensors(&benchfarm_sample_model), 1u);
  EXPECT_EQ(TVMGetNumOutputTensors(&benchfarm_sample_model), 1u);
  EXPECT_EQ(TVMGetWorkspaceSize(&benchfarm_sample_model, 0),
            BENCHFARM_SAMPLE_MODEL_OUTPUTS * sizeof(float));
  EXPECT_EQ(TVMGetNumInputTensors(nullptr), 0u);
  EXPECT_EQ(TVMGetNumOutputTensors(nullptr), 0u);
  EXPECT_EQ(TVMGetNumWorkspaces(nullptr), 0u);
  EXPECT_EQ(TVMGetNumDevices(nullptr), 0u);
}

TEST(AotModel, WorkspaceSizeIndexOutOfRangeIsZero) {
  EXPECT_EQ(TVMGetWorkspaceSize(&benchfarm_sample_model, 1), 0u);
  EXPECT_EQ(TVMGetWorkspaceSize(&benchfarm_sample_model, static_cast<size_t>(-1)), 0u);
  EXPECT_EQ(TVMGetWorkspaceSize(nullptr, 0), 0u);
  const TVMModel no_workspaces = {0, 0, nullptr, 0, nullptr, 0};
  EXPECT_EQ(TVMGetWorkspaceSize(&no_workspaces, 0), 0u);
}

// A test entry point that records what TVMExecute handed it.
void** g_seen_inputs;
void** g_seen_outputs;
TVMContext* g_seen_context;
int32_t RecordingEntryPoint(void** inputs, void** outputs, TVMContext* context) {
  g_seen_inputs = inputs;
  g_seen_outputs = outputs;
  g_seen_context = context;
  return 42;
}

TEST(AotModel, ExecuteForwardsToTheEntryPoint) {
  const size_t sizes[] = {16, 32};
  const TVMModel model = {2, 1, sizes, 2, RecordingEntryPoint, 0};
  void* inputs[2] = {};
  void* outputs[1] = {};
  TVMContext context = {};
  EXPECT_EQ(TVMExecute(&model, inputs, outputs, &context), 42);
  EXPECT_EQ(g_seen_inputs, inputs);
  EXPECT_EQ(g_seen_outputs, outputs);
  EXPECT_EQ(g_seen_context, &context);
  // The seed's "default flow": no context at all.
  EXPECT_EQ(TVMExecute(&model, inputs, outputs, nullptr), 42);
  EXPECT_EQ(g_seen_context, nullptr);
  EXPECT_EQ(TVMGetWorkspaceSize(&model, 1), 32u);
  EXPECT_EQ(TVMGetWorkspaceSize(&model, 2), 0u);

  const TVMModel no_entry = {0, 0, nullptr, 0, nullptr, 0};
  EXPECT_EQ(TVMExecute(&no_entry, inputs, outputs, &context), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMExecute(nullptr, inputs, outputs, &context), kTvmErrorFunctionCallInvalidArg);
}

TEST(AotModel, SettersFillTheContextAndIgnoreNull) {
  void* workspaces[1] = {};
  tvm_device_t devices[1] = {};
  TVMContext context = {};
  TVMSetWorkspaces(&context, workspaces);
  TVMSetDevices(&context, devices);
  EXPECT_EQ(context.workspace, workspaces);
  EXPECT_EQ(context.devices, devices);
  TVMSetWorkspaces(nullptr, workspaces);  // must not crash
  TVMSetDevices(nullptr, devices);
}

TEST_F(SampleModelTest, MatchesReference) {
  const Input cases[] = {
      {1, 2, 3, 4, 5, 6, 7, 8},
      {-1, 0.5f, 2, -3, 0.25f, 1, -2, 4},
      {0, 0, 0, 0, 0, 0, 0, 0},
  };
  int positive = 0;
  int clamped = 0;
  for (Input x : cases) {
    Output y;
    y.fill(-99.0f);
    ASSERT_EQ(Run(x, y), kTvmErrorNoError);
    Output want = Reference(x);
    for (int i = 0; i < BENCHFARM_SAMPLE_MODEL_OUTPUTS; ++i) {
      EXPECT_NEAR(y[i], want[i], 1e-5f) << "output " << i;
      (want[i] > 0 ? positive : clamped)++;
    }
  }
  // The cases exercise both sides of the relu.
  EXPECT_GT(positive, 0);
  EXPECT_GT(clamped, 0);
  // Workspace 0 was really used as scratch.
  EXPECT_NE(workspace_[0], -1.0f);
}

TEST_F(SampleModelTest, OperatorRunsOnTheContextDeviceWhileActive) {
  tvm_device_t other = {};
  tvm_device_host_t other_host = {};
  ASSERT_EQ(TVMDeviceInit(&other), kTvmErrorNoError);
  ASSERT_EQ(TVMDevicePlatformBindHost(&other, &other_host), kTvmErrorNoError);
  ASSERT_EQ(TVMDeviceOpen(&other), kTvmErrorNoError);

  Input x = {1, 1, 1, 1, 1, 1, 1, 1};
  Output y;
  ASSERT_EQ(Run(x, y), kTvmErrorNoError);
  ASSERT_EQ(Run(x, y), kTvmErrorNoError);
  // The operator launched exactly once per run on the context's device (its
  // resource_handle), and only while Active: the model brackets it.
  EXPECT_EQ(host_.activate_count, 2u);
  EXPECT_EQ(host_.launch_count, 2u);
  EXPECT_EQ(host_.deactivate_count, 2u);
  EXPECT_EQ(TVMDeviceGetState(&device_), kTVMDeviceStateOpen);
  EXPECT_EQ(other_host.launch_count, 0u);
  EXPECT_EQ(other_host.activate_count, 0u);

  // Hand the model the other device instead: the launches follow it.
  TVMSetDevices(&context_, &other);
  ASSERT_EQ(Run(x, y), kTvmErrorNoError);
  EXPECT_EQ(other_host.launch_count, 1u);
  EXPECT_EQ(host_.launch_count, 2u);
  TVMSetDevices(&context_, &device_);

  EXPECT_EQ(TVMDeviceClose(&other), kTvmErrorNoError);
}

TEST_F(SampleModelTest, DeviceNotOpenIsRefusedAndNothingRuns) {
  ASSERT_EQ(TVMDeviceClose(&device_), kTvmErrorNoError);
  Input x = {};
  Output y;
  y.fill(-99.0f);
  EXPECT_EQ(Run(x, y), kTvmErrorDeviceBadLifecycle);
  EXPECT_EQ(host_.launch_count, 0u);
  EXPECT_EQ(y[0], -99.0f);
  ASSERT_EQ(TVMDeviceOpen(&device_), kTvmErrorNoError);  // for TearDown
}

TEST_F(SampleModelTest, ForeignDeviceFailsTheOperatorButIsDeactivated) {
  static const tvm_device_ops_t kNoHooks = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
  tvm_device_t foreign = {};
  ASSERT_EQ(TVMDeviceInit(&foreign), kTvmErrorNoError);
  ASSERT_EQ(TVMDeviceBind(&foreign, &kNoHooks, nullptr), kTvmErrorNoError);
  ASSERT_EQ(TVMDeviceOpen(&foreign), kTvmErrorNoError);
  TVMSetDevices(&context_, &foreign);
  Input x = {};
  Output y;
  EXPECT_EQ(Run(x, y), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceGetState(&foreign), kTVMDeviceStateOpen);
  TVMSetDevices(&context_, &device_);
}

TEST_F(SampleModelTest, FailingActivateHookIsReturned) {
  host_.fail_next_hook = 0x1234;
  Input x = {};
  Output y;
  EXPECT_EQ(Run(x, y), 0x1234);
  EXPECT_EQ(host_.launch_count, 0u);
  EXPECT_EQ(TVMDeviceGetState(&device_), kTVMDeviceStateOpen);
}

TEST_F(SampleModelTest, MissingContextPartsAreErrors) {
  Input x = {};
  Output y;
  void* inputs[] = {x.data()};
  void* outputs[] = {y.data()};
  EXPECT_EQ(TVMExecute(&benchfarm_sample_model, inputs, outputs, nullptr),
            kTvmErrorExecutorModuleBadContext);

  TVMContext no_workspace = {nullptr, &device_};
  EXPECT_EQ(TVMExecute(&benchfarm_sample_model, inputs, outputs, &no_workspace),
            kTvmErrorExecutorModuleBadContext);

  void* null_workspace[1] = {nullptr};
  TVMContext null_entry = {null_workspace, &device_};
  EXPECT_EQ(TVMExecute(&benchfarm_sample_model, inputs, outputs, &null_entry),
            kTvmErrorExecutorModuleBadContext);

  alignas(float) uint8_t bytes[32];
  void* misaligned[1] = {bytes + 1};
  TVMContext misaligned_context = {misaligned, &device_};
  EXPECT_EQ(TVMExecute(&benchfarm_sample_model, inputs, outputs, &misaligned_context),
            kTvmErrorExecutorModuleBadContext);

  TVMContext no_devices = {workspaces_, nullptr};
  EXPECT_EQ(TVMExecute(&benchfarm_sample_model, inputs, outputs, &no_devices),
            kTvmErrorExecutorModuleBadContext);

  EXPECT_EQ(TVMExecute(&benchfarm_sample_model, nullptr, outputs, &context_),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMExecute(&benchfarm_sample_model, inputs, nullptr, &context_),
            kTvmErrorFunctionCallInvalidArg);
  void* null_input[] = {nullptr};
  EXPECT_EQ(TVMExecute(&benchfarm_sample_model, null_input, outputs, &context_),
            kTvmErrorFunctionCallInvalidArg);

  // None of these touched the device.
  EXPECT_EQ(host_.activate_count, 0u);
  EXPECT_EQ(TVMDeviceGetState(&device_), kTVMDeviceStateOpen);
}

}  // namespace
