// Kiln CPU runtime: runs a grid of the thread-level program with each GPU
// thread of a block as a cooperative fiber (kiln/cpu/fiber_context.h).
//
// launch_grid runs `body()` once per thread of every block. Blocks run one
// after another on the calling OS thread; the threads of a block are fibers
// with their own stacks (KILN_CPU_FIBER_STACK_BYTES, 64 KiB unless defined
// before the first include), scheduled round robin. A fiber runs until it
// waits: at sync_threads (a barrier of the whole block), at a named barrier
// (bar.sync id, count), for an mbarrier phase (kiln/cpu/tma.h) or at a warp
// collective (a barrier of the lanes of its warp, after which the last lane
// to arrive computes the result for all of them; see WarpCollective). All
// per-block state lives in a BlockState reached through a thread_local
// pointer, so blocks could run on several OS threads at once.
//
// Failures are returned, never hung on: when no fiber can run but some have
// not finished (a barrier that some threads never reach, lanes of a warp at
// different collectives, a collective that needs a full warp in a partial
// warp), launch_grid stops the grid and returns non-zero with a message like
// "block (1,0,0): sync_threads reached by 96 of 128 threads; 32 exited
// without reaching it". The fibers of a failed block are abandoned, not
// unwound: destructors of their locals do not run, so the body should own no
// resources. An exception escaping `body` fails the block too.
//
// Stacks: a fiber's stack holds the body's locals plus the runtime's frames;
// a warp collective's emulation runs on the stack of the lane that arrives
// last and takes up to ~9 KiB (mma, AddressSanitizer builds). Keep a thread's
// locals well under KILN_CPU_FIBER_STACK_BYTES minus that. Running off the
// end faults on a guard page (SIGSEGV); a frame that jumps the guard is
// caught by a canary check after the block and reported as an overflow.
//
// Thread-safety: launch_grid may run on several OS threads at once; each
// uses its own block state and stacks. The body's own shared data (global
// memory) needs the atomics of kiln/cpu/thread_ops.h as on a GPU.
//
// Partial warps: a block of 48 threads has warp 1 with lanes 0-15 only. Its
// collectives gather the lanes that exist; shfl_xor reads a missing lane as
// the reader's own value, ldmatrix needs the lanes whose row addresses it
// reads (8 per matrix) and mma needs all 32, or the block fails. (On a GPU
// these are undefined behaviour.)
#ifndef KILN_CPU_FIBER_H_
#define KILN_CPU_FIBER_H_

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <type_traits>

#include "kiln/cpu/fiber_context.h"

#ifndef KILN_CPU_FIBER_STACK_BYTES
#define KILN_CPU_FIBER_STACK_BYTES (64 * 1024)
#endif

namespace kiln {
namespace rt {
namespace fiber {

constexpr int kMaxBlockThreads = 1024;
// 1024: the period of the 128-byte swizzle, which wgmma applies to address
// bits (as the GPU, whose dynamic shared memory starts at window offset 0).
constexpr std::size_t kSmemAlign = 1024;

enum class FiberState : uint8_t { kRunnable, kAtBarrier, kAtWarp, kAtMbarrier, kDone };

// Named barriers (bar.sync id, count): ids 0..15; 0 is sync_threads.
constexpr int kNamedBarriers = 16;

struct Fiber {
  Context ctx;
  int tid = 0; // linear index in the block: x + bx * (y + by * z)
  int x = 0, y = 0, z = 0;
  int warp = 0, lane = 0;
  FiberState state = FiberState::kRunnable;
  int barrier_id = 0;             // kAtBarrier: which named barrier
  const void* mbarrier = nullptr; // kAtMbarrier: the barrier it waits on
};

// What one lane hands to a warp collective. The pointers are the lane's own
// (its registers, usually on its fiber stack); they stay valid while the lane
// waits, so the lane that computes reads and writes through them.
struct WarpSlot {
  void* dst = nullptr;
  const void* src[3] = {nullptr, nullptr, nullptr};
  uint64_t value = 0; // raw bytes of a register value
  int arg = 0;
};

// The lanes of one warp gathering at a collective. Invariant: `arrived`
// lanes wait in the collective named `name` (nullptr when arrived == 0).
struct WarpExchange {
  const char* name = nullptr;
  int arrived = 0;
  int lanes = 32; // 32, or fewer in the last warp of a block
  WarpSlot slot[32];
};

struct BlockState {
  int block_x = 0, block_y = 0, block_z = 0; // blockIdx
  int grid_x = 1, grid_y = 1, grid_z = 1;    // gridDim
  int dim_x = 1, dim_y = 1, dim_z = 1;       // blockDim
  int threads = 0;
  unsigned char* smem = nullptr;
  std::size_t smem_bytes = 0; // usable bytes at smem (the launch's, rounded up to kSmemAlign)
  Fiber* fibers = nullptr;
  WarpExchange* warps = nullptr;
  int current = 0;                      // the running fiber
  int at_barrier = 0;                   // fibers waiting in sync_threads
  int named_at[kNamedBarriers] = {};    // fibers waiting at named barrier id (1..15)
  int named_count[kNamedBarriers] = {}; // its thread count while some wait
  int at_mbarrier = 0;                  // fibers waiting for an mbarrier phase
  int done = 0;                         // fibers that returned from the body
  Context scheduler;                    // the OS thread's context while fibers run
  void (*invoke)(void* body) = nullptr;
  void* body = nullptr;
  bool failed = false;
  // Threads run to their next barrier in descending order instead of ascending
  // (KILN_CPU_THREAD_ORDER=reverse): a missing barrier between one thread's
  // shared write and another's access then shows in the results (the ctests
  // cpu-reverse/programs/*).
  bool reverse = false;
  char message[512] = {};

  Fiber& self() { return fibers[current]; }
};

namespace detail {

// The block this OS thread is running, or nullptr outside launch_grid.
inline thread_local BlockState* tls_block = nullptr;

} // namespace detail

inline BlockState* CurrentBlock() { return detail::tls_block; }

// Switches from the running fiber to the next runnable one in round-robin
// order, or back to the scheduler if there is none. Returns when this fiber
// is resumed.
inline void Suspend(BlockState* b, bool exiting = false) {
  Fiber& me = b->fibers[b->current];
  for (int step = 1; step <= b->threads; ++step) {
    const int next = b->reverse ? (b->current - step + b->threads) % b->threads
                                : (b->current + step) % b->threads;
    if (b->fibers[next].state != FiberState::kRunnable) continue;
    if (next == b->current) return; // still runnable: nothing to switch to
    b->current = next;
    Switch(&me.ctx, &b->fibers[next].ctx, exiting);
    return;
  }
  Switch(&me.ctx, &b->scheduler, exiting);
}

// Fails the block with a printf-style message and leaves the running fiber
// for good. Only called on a fiber.
[[noreturn]] inline void FailBlock(BlockState* b, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
[[noreturn]] inline void FailBlock(BlockState* b, const char* fmt, ...) {
  if (!b->failed) {
    b->failed = true;
    const int n = std::snprintf(b->message, sizeof b->message, "block (%d,%d,%d): ", b->block_x,
                                b->block_y, b->block_z);
    std::va_list args;
    va_start(args, fmt);
    std::vsnprintf(b->message + n, sizeof b->message - static_cast<std::size_t>(n), fmt, args);
    va_end(args);
  }
  Switch(&b->self().ctx, &b->scheduler, /*from_exits=*/true);
  std::abort(); // the scheduler never resumes a failed block's fibers
}

// Aborts the process: a warp collective ran outside launch_grid, where there
// is no warp. (The warp-wide emulations in ldmatrix.h, mma.h and warp.h take
// all 32 lanes' registers instead and work anywhere.)
[[noreturn]] inline void OutsideLaunch(const char* name) {
  std::fprintf(stderr, "kiln::rt::%s: a per-lane warp collective called outside launch_grid\n",
               name);
  std::abort();
}

// __syncthreads: returns once every thread of the block has called it. The
// last thread to arrive releases the others and goes on without switching.
// Outside launch_grid it does nothing.
inline void BlockBarrier() {
  BlockState* b = CurrentBlock();
  if (b == nullptr) return;
  if (++b->at_barrier == b->threads) {
    b->at_barrier = 0;
    for (int i = 0; i < b->threads; ++i)
      if (b->fibers[i].state == FiberState::kAtBarrier && b->fibers[i].barrier_id == 0)
        b->fibers[i].state = FiberState::kRunnable;
    return;
  }
  b->self().state = FiberState::kAtBarrier;
  b->self().barrier_id = 0;
  Suspend(b);
}

// bar.sync id, threads: returns once `threads` threads (a multiple of 32, at
// most the block's) have called it with this id. Id 0 is sync_threads (all
// threads). Calls with one id and different counts while some wait fail the
// block. Outside launch_grid it does nothing. With `wait` false it is
// bar.arrive (ids 1..15): the caller counts toward the barrier and goes on.
inline void NamedBarrier(int id, int threads, bool wait = true) {
  BlockState* b = CurrentBlock();
  if (b == nullptr) return;
  if (id < 0 || id >= kNamedBarriers || threads <= 0 || threads % 32 != 0 || threads > b->threads)
    FailBlock(b,
              "thread %d: bar.sync %d, %d: the id must be 0..15 and the count a multiple of 32 "
              "up to the block's %d threads",
              b->self().tid, id, threads, b->threads);
  if (!wait && id == 0) FailBlock(b, "thread %d: bar.arrive needs an id 1..15", b->self().tid);
  if (id == 0 && threads == b->threads) {
    BlockBarrier();
    return;
  }
  if (id == 0) FailBlock(b, "thread %d: bar.sync 0 counts the whole block", b->self().tid);
  if (b->named_at[id] > 0 && b->named_count[id] != threads)
    FailBlock(b, "thread %d: bar.sync %d with %d threads while %d wait there for %d", b->self().tid,
              id, threads, b->named_at[id], b->named_count[id]);
  b->named_count[id] = threads;
  if (++b->named_at[id] == threads) {
    b->named_at[id] = 0;
    for (int i = 0; i < b->threads; ++i)
      if (b->fibers[i].state == FiberState::kAtBarrier && b->fibers[i].barrier_id == id)
        b->fibers[i].state = FiberState::kRunnable;
    return;
  }
  if (!wait) return; // bar.arrive: counted, not waiting
  b->self().state = FiberState::kAtBarrier;
  b->self().barrier_id = id;
  Suspend(b);
}

// Parks the running fiber until WakeMbarrier(bar) (an mbarrier phase of
// `bar` completed); the caller re-checks its condition after it returns.
inline void WaitMbarrier(BlockState* b, const void* bar) {
  b->self().state = FiberState::kAtMbarrier;
  b->self().mbarrier = bar;
  ++b->at_mbarrier;
  Suspend(b);
}

inline void WakeMbarrier(BlockState* b, const void* bar) {
  for (int i = 0; i < b->threads; ++i) {
    Fiber& f = b->fibers[i];
    if (f.state == FiberState::kAtMbarrier && f.mbarrier == bar) {
      f.state = FiberState::kRunnable;
      f.mbarrier = nullptr;
      --b->at_mbarrier;
    }
  }
}

// One lane's part of the warp collective `name` (a string literal; lanes
// match by its text). The lane deposits `mine`; the last lane of the warp to
// arrive calls compute(block, exchange), which reads every lane's slot and
// writes every lane's results through their `dst`, while the other lanes
// wait. compute may call FailBlock. Lanes of one warp reaching different
// collectives fail the block.
template <class Compute>
inline void WarpCollective(const char* name, const WarpSlot& mine, Compute&& compute) {
  BlockState* b = CurrentBlock();
  if (b == nullptr) OutsideLaunch(name);
  Fiber& me = b->self();
  WarpExchange& ex = b->warps[me.warp];
  if (ex.arrived == 0) {
    ex.name = name;
  } else if (std::strcmp(ex.name, name) != 0) {
    FailBlock(b, "warp %d: lane %d reached %s while %d lane(s) of its warp wait in %s", me.warp,
              me.lane, name, ex.arrived, ex.name);
  }
  ex.slot[me.lane] = mine;
  if (++ex.arrived < ex.lanes) {
    me.state = FiberState::kAtWarp;
    Suspend(b);
    return;
  }
  compute(b, ex);
  ex.arrived = 0;
  ex.name = nullptr;
  const int first = me.warp * 32;
  for (int i = first; i < first + ex.lanes; ++i)
    if (b->fibers[i].state == FiberState::kAtWarp) b->fibers[i].state = FiberState::kRunnable;
}

namespace detail {

inline void FiberMain(void* arg) {
  BlockState* b = static_cast<BlockState*>(arg);
  OnFiberEntry(&b->scheduler);
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  try {
    b->invoke(b->body);
  } catch (...) {
    const Fiber& me = b->self();
    FailBlock(b, "thread (%d,%d,%d) threw an exception", me.x, me.y, me.z);
  }
#else
  b->invoke(b->body);
#endif
  b->self().state = FiberState::kDone;
  ++b->done;
  Suspend(b, /*exiting=*/true);
  std::abort(); // a finished fiber is never resumed
}

// Writes why the block stopped with unfinished fibers into b->message.
inline void DescribeDeadlock(BlockState* b) {
  const int n = std::snprintf(b->message, sizeof b->message, "block (%d,%d,%d): ", b->block_x,
                              b->block_y, b->block_z);
  char* out = b->message + n;
  const std::size_t room = sizeof b->message - static_cast<std::size_t>(n);
  int at_warp = 0;
  for (int i = 0; i < b->threads; ++i) at_warp += b->fibers[i].state == FiberState::kAtWarp;
  if (b->at_barrier > 0) {
    int len = std::snprintf(out, room, "sync_threads reached by %d of %d threads", b->at_barrier,
                            b->threads);
    if (b->done > 0 && len >= 0 && static_cast<std::size_t>(len) < room)
      len += std::snprintf(out + len, room - static_cast<std::size_t>(len),
                           "; %d exited without reaching it", b->done);
    if (at_warp > 0 && len >= 0 && static_cast<std::size_t>(len) < room) {
      const WarpExchange* ex = nullptr;
      for (int w = 0; ex == nullptr; ++w)
        if (b->warps[w].arrived > 0) ex = &b->warps[w];
      std::snprintf(out + len, room - static_cast<std::size_t>(len),
                    "; %d wait in a warp collective (%s)", at_warp, ex->name);
    }
    return;
  }
  for (int id = 1; id < kNamedBarriers; ++id) {
    if (b->named_at[id] == 0) continue;
    std::snprintf(out, room,
                  "bar.sync %d reached by %d of its %d threads (%d exited, %d wait on "
                  "an mbarrier)",
                  id, b->named_at[id], b->named_count[id], b->done, b->at_mbarrier);
    return;
  }
  if (b->at_mbarrier > 0) {
    const Fiber* f = nullptr;
    for (int i = 0; f == nullptr; ++i)
      if (b->fibers[i].state == FiberState::kAtMbarrier) f = &b->fibers[i];
    std::snprintf(out, room,
                  "%d thread(s) wait for an mbarrier phase that never completes (thread %d at "
                  "shared offset %ld); %d exited",
                  b->at_mbarrier, f->tid,
                  static_cast<long>(static_cast<const unsigned char*>(f->mbarrier) - b->smem),
                  b->done);
    return;
  }
  for (int w = 0; w * 32 < b->threads; ++w) {
    const WarpExchange& ex = b->warps[w];
    if (ex.arrived == 0) continue;
    std::snprintf(out, room, "warp %d: %s reached by %d of %d lanes; the others exited", w, ex.name,
                  ex.arrived, ex.lanes);
    return;
  }
  std::snprintf(out, room, "%d of %d threads did not finish", b->threads - b->done, b->threads);
}

// This OS thread's stacks, kept from launch to launch (mapping them and
// their guards costs more than a small kernel's run: 18 ms against 0.1 ms
// for an empty 1024-thread block); unmapped at thread exit. Holds
// 80 KiB of address space per thread of the largest block run so far.
inline StackPool& ThreadStackPool() {
  static thread_local StackPool pool;
  return pool;
}

inline int Report(char* error, int error_len, const char* message) {
  if (error == nullptr || error_len <= 0) return 1;
  std::size_t n = std::strlen(message);
  if (n > static_cast<std::size_t>(error_len) - 1) n = static_cast<std::size_t>(error_len) - 1;
  std::memcpy(error, message, n); // truncates; snprintf("%s") would warn about that
  error[n] = '\0';
  return 1;
}

} // namespace detail
} // namespace fiber

// Runs `body()` for every thread of a gx*gy*gz grid of bx*by*bz blocks, each
// block with `smem_bytes` of zeroed, 1024-byte aligned dynamic shared memory
// (rt::dyn_smem()). Returns 0, or non-zero with a NUL-terminated message in
// error[0..error_len) (truncated to fit) if a block failed or the launch is
// invalid; no later block runs after a failure. Not reentrant: `body` must
// not call launch_grid. Blocks run in x, then y, then z order; within a block,
// threads run to their next barrier in ascending order, or descending with
// KILN_CPU_THREAD_ORDER=reverse in the environment.
template <class F>
int launch_grid(int gx, int gy, int gz, int bx, int by, int bz, std::size_t smem_bytes, F&& body,
                char* error, int error_len) {
  char message[256];
  if (fiber::detail::tls_block != nullptr)
    return fiber::detail::Report(error, error_len, "launch_grid called from inside a kernel");
  if (gx < 0 || gy < 0 || gz < 0 || bx < 1 || by < 1 || bz < 1) {
    std::snprintf(message, sizeof message, "invalid launch: grid (%d,%d,%d), block (%d,%d,%d)", gx,
                  gy, gz, bx, by, bz);
    return fiber::detail::Report(error, error_len, message);
  }
  const long long threads = static_cast<long long>(bx) * by * bz;
  if (threads > fiber::kMaxBlockThreads) {
    std::snprintf(message, sizeof message, "block (%d,%d,%d) has %lld threads, more than %d", bx,
                  by, bz, threads, fiber::kMaxBlockThreads);
    return fiber::detail::Report(error, error_len, message);
  }
  if (static_cast<long long>(gx) * gy * gz == 0) return 0;
  const int n = static_cast<int>(threads);
  const int warps = (n + 31) / 32;

  fiber::StackPool& stacks = fiber::detail::ThreadStackPool();
  if ((stacks.count() < n || stacks.size() < KILN_CPU_FIBER_STACK_BYTES) &&
      !stacks.Allocate(n, KILN_CPU_FIBER_STACK_BYTES)) {
    std::snprintf(message, sizeof message, "cannot map %d fiber stacks of %d bytes", n,
                  static_cast<int>(KILN_CPU_FIBER_STACK_BYTES));
    return fiber::detail::Report(error, error_len, message);
  }
  const std::size_t smem_alloc =
      (smem_bytes + fiber::kSmemAlign - 1) / fiber::kSmemAlign * fiber::kSmemAlign;
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> smem(
      static_cast<unsigned char*>(::operator new(smem_alloc > 0 ? smem_alloc : fiber::kSmemAlign,
                                                 std::align_val_t(fiber::kSmemAlign),
                                                 std::nothrow)),
      [](unsigned char* p) { ::operator delete(p, std::align_val_t(fiber::kSmemAlign)); });
  std::unique_ptr<fiber::Fiber[]> fibers(new (std::nothrow)
                                             fiber::Fiber[static_cast<std::size_t>(n)]);
  std::unique_ptr<fiber::WarpExchange[]> exchanges(
      new (std::nothrow) fiber::WarpExchange[static_cast<std::size_t>(warps)]);
  std::unique_ptr<fiber::BlockState> block(new (std::nothrow) fiber::BlockState);
  if (!smem || !fibers || !exchanges || !block)
    return fiber::detail::Report(error, error_len, "out of memory for the block state");

  using Body = std::remove_reference_t<F>;
  fiber::BlockState& b = *block;
  b.grid_x = gx, b.grid_y = gy, b.grid_z = gz;
  b.dim_x = bx, b.dim_y = by, b.dim_z = bz;
  b.threads = n;
  b.smem = smem.get();
  b.smem_bytes = smem_alloc;
  b.fibers = fibers.get();
  b.warps = exchanges.get();
  const char* order = std::getenv("KILN_CPU_THREAD_ORDER");
  b.reverse = order != nullptr && std::strcmp(order, "reverse") == 0;
  b.invoke = [](void* p) { (*static_cast<Body*>(p))(); };
  b.body = const_cast<void*>(static_cast<const volatile void*>(std::addressof(body)));
  for (int i = 0; i < n; ++i) {
    fiber::Fiber& f = fibers[i];
    f.tid = i;
    f.x = i % bx;
    f.y = i / bx % by;
    f.z = i / (bx * by);
    f.warp = i / 32;
    f.lane = i % 32;
  }
  for (int w = 0; w < warps; ++w) exchanges[w].lanes = n - 32 * w < 32 ? n - 32 * w : 32;

  int rc = 0;
  for (int z = 0; z < gz && rc == 0; ++z) {
    for (int y = 0; y < gy && rc == 0; ++y) {
      for (int x = 0; x < gx && rc == 0; ++x) {
        b.block_x = x, b.block_y = y, b.block_z = z;
        b.current = b.reverse ? n - 1 : 0, b.at_barrier = 0, b.done = 0, b.at_mbarrier = 0;
        for (int id = 0; id < fiber::kNamedBarriers; ++id) b.named_at[id] = b.named_count[id] = 0;
        std::memset(b.smem, 0, smem_alloc);
        for (int w = 0; w < warps; ++w) exchanges[w].arrived = 0, exchanges[w].name = nullptr;
        for (int i = 0; i < n; ++i) {
          stacks.WriteCanary(i);
          fibers[i].state = fiber::FiberState::kRunnable;
          fibers[i].mbarrier = nullptr;
          if (!fiber::MakeContext(&fibers[i].ctx, stacks.lo(i), stacks.size(),
                                  &fiber::detail::FiberMain, &b))
            return fiber::detail::Report(error, error_len, "cannot create a fiber context");
        }
        fiber::detail::tls_block = &b;
        fiber::Switch(&b.scheduler, &fibers[b.current].ctx);
        fiber::detail::tls_block = nullptr;
        for (int i = 0; i < n && !b.failed; ++i) {
          if (!stacks.CanaryIntact(i)) {
            b.failed = true;
            std::snprintf(b.message, sizeof b.message,
                          "block (%d,%d,%d): thread %d overflowed its %d-byte fiber stack (raise "
                          "KILN_CPU_FIBER_STACK_BYTES)",
                          x, y, z, i, static_cast<int>(KILN_CPU_FIBER_STACK_BYTES));
          }
        }
        if (!b.failed && b.done != n) fiber::detail::DescribeDeadlock(&b);
        if (b.failed || b.done != n) rc = fiber::detail::Report(error, error_len, b.message);
      }
    }
  }
  return rc;
}

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_FIBER_H_
