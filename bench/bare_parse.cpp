// The floor under any lint: libonnx's protobuf parse of the whole ModelProto
// (ModelProto::ParseFromCodedStream on an arena, weights included), nothing else. A lint
// must at least parse the graph, so bench/run.sh times this beside bpu-lint
// (issue 29: the findings-heavy graph should lint in <= 2.5x this).
//
// Usage: bench_bare_parse MODEL.onnx   (prints the main graph's node count)
#include <fcntl.h>
#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <climits>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.onnx\n", argv[0]);
    return 2;
  }
  const int fd = ::open(argv[1], O_RDONLY);
  if (fd < 0) {
    std::perror(argv[1]);
    return 2;
  }
  // On an arena, as bpu-lint's loader parses (one allocation per block, not
  // per message), and left to the OS at exit, as bpu-lint leaves its reports:
  // malloc per message and teardown are not the floor.
  auto* arena = new google::protobuf::Arena;
  auto* model = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(arena);
  bool ok = false;
  {
    google::protobuf::io::FileInputStream file(fd);
    google::protobuf::io::CodedInputStream in(&file);
    in.SetTotalBytesLimit(INT_MAX);  // models up to protobuf's 2 GiB limit
    ok = model->ParseFromCodedStream(&in);
  }
  ::close(fd);
  if (!ok) {
    std::fprintf(stderr, "%s: not a ModelProto\n", argv[1]);
    return 2;
  }
  std::printf("%d nodes\n", model->graph().node_size());
  return 0;
}
