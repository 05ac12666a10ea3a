"""Protobuf and gRPC C++ code from Debian's protoc and grpc_cpp_plugin.

bf_proto_library(name = "foo", srcs = ["foo.proto"], deps = ["//proto:bar"])
defines, for every proto package:
  foo_proto    - the .proto files (and those of deps), for other proto targets
  foo_cc_proto - cc_library with the messages (foo.pb.h)
  foo_cc_grpc  - cc_library with the services (foo.grpc.pb.h), only if grpc = True

deps name other bf_proto_library targets by their base name. Generated
headers are included by workspace path: #include "proto/foo.pb.h".
"""

def _base(label):
    # "//proto:bar" -> "//proto:bar_proto" etc.
    return label

def bf_proto_library(name, srcs, deps = [], grpc = True, visibility = None):
    proto_deps = [_base(d) + "_proto" for d in deps]
    native.filegroup(
        name = name + "_proto",
        srcs = srcs + proto_deps,
        visibility = visibility,
    )

    stems = [s[:-len(".proto")] for s in srcs]
    pb_outs = []
    for s in stems:
        pb_outs += [s + ".pb.h", s + ".pb.cc"]
    grpc_outs = []
    for s in stems:
        grpc_outs += [s + ".grpc.pb.h", s + ".grpc.pb.cc"]

    # protoc runs from the execution root; sources are named by workspace path,
    # so outputs land in $(GENDIR)/<package>/ as the outs above.
    src_paths = " ".join(["$(location %s)" % s for s in srcs])
    native.genrule(
        name = name + "_pb_gen",
        srcs = [":" + name + "_proto"],
        outs = pb_outs,
        cmd = "protoc --proto_path=. --proto_path=$(GENDIR) --proto_path=/usr/include " +
              "--cpp_out=$(GENDIR) " + src_paths,
        tools = srcs,
    )
    native.cc_library(
        name = name + "_cc_proto",
        srcs = [s + ".pb.cc" for s in stems],
        hdrs = [s + ".pb.h" for s in stems],
        deps = [d + "_cc_proto" for d in deps] + ["//third_party:protobuf"],
        visibility = visibility,
    )

    if grpc:
        native.genrule(
            name = name + "_grpc_gen",
            srcs = [":" + name + "_proto"],
            outs = grpc_outs,
            cmd = "protoc --proto_path=. --proto_path=/usr/include " +
                  "--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin " +
                  "--grpc_out=$(GENDIR) " + src_paths,
            tools = srcs,
        )
        native.cc_library(
            name = name + "_cc_grpc",
            srcs = [s + ".grpc.pb.cc" for s in stems],
            hdrs = [s + ".grpc.pb.h" for s in stems],
            deps = [":" + name + "_cc_proto", "//third_party:grpc"],
            visibility = visibility,
        )
