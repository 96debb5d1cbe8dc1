// Live ranges of a kernel's shared-memory buffers and their placement in the
// block's shared memory, where buffers whose live ranges do not overlap may
// share bytes. verify-resources (tile IR: is there room?) and the
// shared-placement pass (thread IR: the offsets the emitter uses) both place
// with these functions.
//
// Positions. The statements of a kernel body are numbered in program order
// at its uniform levels: the body itself and both branches of an `if` whose
// condition every thread of the block evaluates alike (literals, block
// indices, shape symbols and scalar parameters only: no thread index, no
// loaded value). Every other statement is one position as a whole: a loop of
// any kind (a use in any iteration keeps the buffer live for the whole loop,
// which is also how a pipelined loop's stages stay live), an `if` that
// threads may take differently (a warp-specialized producer/consumer split),
// a T.ws region. Such a statement is a "unit"; a block barrier placed
// between two units of one uniform list is reached by every thread.
// A buffer is live from the first to the last position that names it (a
// region operand, a stored-to buffer, a load, an address, a variable of its
// name; its own alloc statement and T.annotate_layout do not count).
//
// Thread-safe (pure functions of their arguments).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::passes {

// Positions [first, last]; empty (first > last) for a buffer nothing names.
struct LiveRange {
  int64_t first = 0;
  int64_t last = -1;
  bool empty() const { return first > last; }
  bool Overlaps(const LiveRange& o) const {
    return !empty() && !o.empty() && first <= o.last && o.first <= last;
  }
};

// One unit of the kernel body (see above): (*list)[index] is the statement,
// its position is its place in the vector LiveUnits returns.
struct LiveUnit {
  const std::vector<ir::Stmt>* list = nullptr;
  size_t index = 0;
};

// The units of `program`'s kernel body in program order. The pointers stay
// valid while the program's statements are not changed.
std::vector<LiveUnit> LiveUnits(const ir::Program& program);

// Inserts `stmts` right before each unit whose position is in `positions`
// (in that unit's list, so a barrier among them is reached by every thread).
void InsertBeforeUnits(ir::Program& program, const std::set<int64_t>& positions,
                       const std::vector<ir::Stmt>& stmts);

// The live range of each of `buffers` over `program`'s kernel body (an empty
// range for those nothing names).
std::map<std::string, LiveRange> SharedLiveRanges(const ir::Program& program,
                                                  const std::set<std::string>& buffers);

// A buffer to place: all of its bytes (pipeline stages included), the
// alignment of its offset (a power of two) and its live range.
struct SharedSlot {
  std::string name;
  int64_t bytes = 0;
  int64_t align = 1;
  LiveRange live;
};

struct SharedLayout {
  std::vector<int64_t> offsets; // one per slot, in the slots' order
  int64_t total = 0;            // bytes up to the end of the highest slot
};

// Every slot after the previous one, in order, each offset rounded up to
// its alignment: the placement without reuse.
SharedLayout PlaceSequential(const std::vector<SharedSlot>& slots);

// Offsets such that two slots whose live ranges overlap never share a byte
// (slots with an empty range overlap nothing and go to offset 0): each slot,
// largest first, at the lowest aligned offset clear of the slots already
// placed whose ranges overlap its own; the same again in order of first use;
// the smaller of the two. Never more than PlaceSequential's total.
SharedLayout PlaceByLiveness(const std::vector<SharedSlot>& slots);

// The pairs (earlier, later) of slot indices that share bytes in `layout`:
// every access to `earlier` must be complete, for every thread, before the
// first access to `later` (a block barrier between the two).
std::vector<std::pair<size_t, size_t>> SharedReuses(const std::vector<SharedSlot>& slots,
                                                    const SharedLayout& layout);

} // namespace kiln::passes
