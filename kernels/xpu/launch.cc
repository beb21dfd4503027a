#include "kernels/xpu/launch.h"

namespace tessera::xpu {
namespace {

size_t round_up(int64_t n, size_t group) { return (size_t(n) + group - 1) / group * group; }

}  // namespace

Range linear_range(int64_t n, size_t group) {
  Range r;
  r.global[0] = round_up(n, group);
  r.local[0] = group;
  return r;
}

Range grid_range(int64_t x, int64_t y, size_t group) {
  Range r;
  r.dims = 2;
  r.global[0] = round_up(x, group);
  r.global[1] = size_t(y);
  r.local[0] = group;
  r.local[1] = 1;
  return r;
}

Range groups_range(int64_t x, int64_t y, size_t group) {
  Range r;
  r.dims = 2;
  r.global[0] = size_t(x) * group;
  r.global[1] = size_t(y);
  r.local[0] = group;
  r.local[1] = 1;
  return r;
}

}  // namespace tessera::xpu
