// bench_torch_peer: the libtorch twins (torch_*.cpp) built against the torch wheel, in their own
// process because two libtorch versions cannot share one (Note [Two libtorch peers] in peer.h).
//   bench_torch_peer --serve IN OUT   bench_ops's child: case names on fd IN, answers on fd OUT
//   bench_torch_peer --list           the cases it has a twin for
//   bench_torch_peer NAME...          runs those twins and prints seconds per call (by hand)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "harness.h"

namespace {

/// One twin's answer line: "sec S", "none" or "error MESSAGE" (the message's first line).
std::string answer(const std::string& name) {
  const auto it = bench::twins().find(name);
  if (it == bench::twins().end()) return "none";
  try {
    const double sec = it->second();
    std::fflush(stdout);  // a twin's own printout reaches bench_ops's terminal before the row
    if (!(sec > 0)) return "none";  // NaN or 0: no figure on this machine (a data set missing)
    char buf[64];
    std::snprintf(buf, sizeof buf, "sec %.17g", sec);
    return buf;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    return "error " + msg.substr(0, msg.find('\n'));
  }
}

int serve(int in_fd, int out_fd) {
  FILE* in = ::fdopen(in_fd, "r");
  FILE* out = ::fdopen(out_fd, "w");
  if (!in || !out) return 2;
  std::fprintf(out, "ready %s\n", bench::torch_version().c_str());
  std::fflush(out);
  char buf[4096];
  while (std::fgets(buf, sizeof buf, in)) {
    std::string name = buf;
    if (!name.empty() && name.back() == '\n') name.pop_back();
    std::fprintf(out, "%s\n", answer(name).c_str());
    if (std::fflush(out) != 0) return 1;  // bench_ops went away
  }
  return 0;  // end-of-file: bench_ops is done
}

}  // namespace

int main(int argc, char** argv) {
  bench::torch_available();  // 2 intra-op threads, as bench_ops
  if (argc == 4 && std::strcmp(argv[1], "--serve") == 0) return serve(std::atoi(argv[2]), std::atoi(argv[3]));
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const auto& kv : bench::twins()) std::printf("%s\n", kv.first.c_str());
    return 0;
  }
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: bench_torch_peer --serve IN_FD OUT_FD | --list | NAME...\n");
    return 2;
  }
  std::printf("libtorch %s\n", bench::torch_version().c_str());
  for (int i = 1; i < argc; ++i) std::printf("%-30s %s\n", argv[i], answer(argv[i]).c_str());
  return 0;
}
