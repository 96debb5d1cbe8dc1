// Kiln CPU runtime: execution contexts and stacks for the fiber scheduler
// (kiln/cpu/fiber.h). A context is a suspended call stack; Switch() saves the
// running one and resumes another on the same OS thread.
//
// x86-64 (SysV) switches with a few instructions of assembly that save what
// the ABI says a callee preserves: rbx, rbp, r12-r15, rsp, and the MXCSR and
// x87 control words (rounding mode, flush-to-zero). Other targets, or any
// build with KILN_CPU_FIBER_UCONTEXT defined, use <ucontext.h>, which is
// slower (it saves the signal mask with a system call) but portable.
//
// Stacks are mmap'ed in one mapping per scheduler, each with a PROT_NONE
// guard below it, so running off the end faults instead of overwriting a
// neighbour; a canary word above the guard catches frames that jump over the
// guard. Under AddressSanitizer every switch is announced to it.
//
// Thread-safety: a Context and a StackPool belong to one OS thread at a time.
#ifndef KILN_CPU_FIBER_CONTEXT_H_
#define KILN_CPU_FIBER_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

#if !defined(KILN_CPU_FIBER_UCONTEXT) && !(defined(__x86_64__) && defined(__ELF__))
#define KILN_CPU_FIBER_UCONTEXT 1
#endif
#ifdef KILN_CPU_FIBER_UCONTEXT
#include <ucontext.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define KILN_CPU_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_CPU_FIBER_ASAN 1
#endif
#endif
#ifdef KILN_CPU_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#ifndef KILN_CPU_FIBER_UCONTEXT
// kiln_rt_fiber_switch_v1(void** save_sp, void* load_sp): pushes the
// callee-saved state, stores rsp in *save_sp, loads load_sp and pops the state
// saved there. kiln_rt_fiber_entry_v1 is where a fresh context "returns" to:
// it calls r13(r12). Weak, hidden and in a COMDAT group, so every translation
// unit may carry a copy and a shared object keeps its own.
asm(R"(
  .pushsection .text.kiln_rt_fiber_switch_v1,"axG",@progbits,kiln_rt_fiber_switch_v1,comdat
  .weak kiln_rt_fiber_switch_v1
  .hidden kiln_rt_fiber_switch_v1
  .type kiln_rt_fiber_switch_v1,@function
  .weak kiln_rt_fiber_entry_v1
  .hidden kiln_rt_fiber_entry_v1
  .type kiln_rt_fiber_entry_v1,@function
  .p2align 4
kiln_rt_fiber_switch_v1:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kiln_rt_fiber_switch_v1, .-kiln_rt_fiber_switch_v1
  .p2align 4
kiln_rt_fiber_entry_v1:
  .cfi_startproc
  .cfi_undefined rip
  movq %r12, %rdi
  callq *%r13
  ud2
  .cfi_endproc
  .size kiln_rt_fiber_entry_v1, .-kiln_rt_fiber_entry_v1
  .popsection
)");
extern "C" void kiln_rt_fiber_switch_v1(void** save_sp, void* load_sp)
    __attribute__((visibility("hidden")));
extern "C" void kiln_rt_fiber_entry_v1() __attribute__((visibility("hidden")));
#endif

namespace kiln {
namespace rt {
namespace fiber {

// A fiber entry point. It must never return: it ends by switching away.
using EntryFn = void (*)(void* arg);

struct Context {
#ifdef KILN_CPU_FIBER_UCONTEXT
  ucontext_t uc;
#else
  void* sp = nullptr; // saved stack pointer while suspended
#endif
  // The stack the context runs on (for AddressSanitizer); null for the OS
  // thread's own stack until learned.
  const void* stack_lo = nullptr;
  std::size_t stack_size = 0;
};

#ifdef KILN_CPU_FIBER_UCONTEXT
namespace detail {
// makecontext passes int arguments only: the pointers travel in halves.
inline void UcontextEntry(unsigned fn_hi, unsigned fn_lo, unsigned arg_hi, unsigned arg_lo) {
  const auto join = [](unsigned hi, unsigned lo) {
    return static_cast<std::uintptr_t>((static_cast<std::uint64_t>(hi) << 32) | lo);
  };
  const EntryFn fn = reinterpret_cast<EntryFn>(join(fn_hi, fn_lo));
  fn(reinterpret_cast<void*>(join(arg_hi, arg_lo)));
}
} // namespace detail
#endif

// Prepares `ctx` to run fn(arg) on [lo, lo + size) when first switched to.
// Returns false if the platform refuses (ucontext only).
inline bool MakeContext(Context* ctx, void* lo, std::size_t size, EntryFn fn, void* arg) {
  ctx->stack_lo = lo;
  ctx->stack_size = size;
#ifdef KILN_CPU_FIBER_ASAN
  // A reused stack still carries the poisoned redzones of its last run.
  __asan_unpoison_memory_region(lo, size);
#endif
#ifdef KILN_CPU_FIBER_UCONTEXT
  if (getcontext(&ctx->uc) != 0) return false;
  ctx->uc.uc_stack.ss_sp = lo;
  ctx->uc.uc_stack.ss_size = size;
  ctx->uc.uc_link = nullptr;
  const auto fn_bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(fn));
  const auto arg_bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(arg));
  makecontext(&ctx->uc, reinterpret_cast<void (*)()>(&detail::UcontextEntry), 4,
              static_cast<unsigned>(fn_bits >> 32), static_cast<unsigned>(fn_bits),
              static_cast<unsigned>(arg_bits >> 32), static_cast<unsigned>(arg_bits));
  return true;
#else
  // The frame kiln_rt_fiber_switch_v1 pops, lowest address first: MXCSR and
  // x87 control word (inherited from the creating thread), r15, r14, r13 = fn,
  // r12 = arg, rbx, rbp, return address = the entry trampoline. After the
  // `ret`, rsp is 16-byte aligned, as a `call` needs.
  auto top = reinterpret_cast<std::uintptr_t>(lo) + size;
  top &= ~static_cast<std::uintptr_t>(15);
  auto* frame = reinterpret_cast<std::uint64_t*>(top - 80);
  std::uint32_t mxcsr;
  std::uint16_t fpucw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  std::memset(frame, 0, 80);
  std::memcpy(&frame[0], &mxcsr, sizeof mxcsr);
  std::memcpy(reinterpret_cast<unsigned char*>(&frame[0]) + 4, &fpucw, sizeof fpucw);
  frame[3] = reinterpret_cast<std::uintptr_t>(fn);
  frame[4] = reinterpret_cast<std::uintptr_t>(arg);
  frame[7] = reinterpret_cast<std::uintptr_t>(&kiln_rt_fiber_entry_v1);
  ctx->sp = frame;
  return true;
#endif
}

// Suspends the running context into `from` and resumes `to`. Pass
// from_exits = true when `from` will never be resumed, so that
// AddressSanitizer can drop its fake stack.
inline void Switch(Context* from, Context* to, bool from_exits = false) {
#ifdef KILN_CPU_FIBER_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(from_exits ? nullptr : &fake_stack, to->stack_lo, to->stack_size);
#else
  (void)from_exits;
#endif
#ifdef KILN_CPU_FIBER_UCONTEXT
  swapcontext(&from->uc, &to->uc);
#else
  kiln_rt_fiber_switch_v1(&from->sp, to->sp);
#endif
#ifdef KILN_CPU_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

// Called first thing in a fiber's entry function. Records in `came_from` the
// stack of the context that switched here if it is not known yet (the OS
// thread's stack, for AddressSanitizer's sake).
inline void OnFiberEntry(Context* came_from) {
#ifdef KILN_CPU_FIBER_ASAN
  const void* lo = nullptr;
  std::size_t size = 0;
  __sanitizer_finish_switch_fiber(nullptr, &lo, &size);
  if (came_from->stack_lo == nullptr) {
    came_from->stack_lo = lo;
    came_from->stack_size = size;
  }
#else
  (void)came_from;
#endif
}

// `count` stacks of `size` usable bytes in one mapping, each above a
// PROT_NONE guard, with a canary at its lowest bytes.
class StackPool {
 public:
  static constexpr std::uint64_t kCanary = 0x6b696c6e2d737461ull; // "kiln-sta"
  static constexpr int kCanaryWords = 8;

  StackPool() = default;
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  ~StackPool() { Release(); }

  // Returns false (and holds nothing) if the memory cannot be mapped.
  bool Allocate(int count, std::size_t size) {
    Release();
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    guard_ = (kGuardBytes + page - 1) / page * page;
    size_ = (size + page - 1) / page * page;
    bytes_ = (guard_ + size_) * static_cast<std::size_t>(count);
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    base_ = static_cast<unsigned char*>(p);
    count_ = count;
    for (int i = 0; i < count; ++i) {
      if (mprotect(base_ + (guard_ + size_) * static_cast<std::size_t>(i), guard_, PROT_NONE) !=
          0) {
        Release();
        return false;
      }
    }
    return true;
  }

  int count() const { return count_; }
  std::size_t size() const { return size_; }
  void* lo(int i) const { return base_ + (guard_ + size_) * static_cast<std::size_t>(i) + guard_; }

  void WriteCanary(int i) {
    for (int w = 0; w < kCanaryWords; ++w) std::memcpy(Word(i, w), &kCanary, sizeof kCanary);
  }
  bool CanaryIntact(int i) const {
    for (int w = 0; w < kCanaryWords; ++w)
      if (std::memcmp(Word(i, w), &kCanary, sizeof kCanary) != 0) return false;
    return true;
  }

 private:
  static constexpr std::size_t kGuardBytes = 16 * 1024;

  unsigned char* Word(int i, int w) const {
    return static_cast<unsigned char*>(lo(i)) + static_cast<std::size_t>(w) * sizeof(std::uint64_t);
  }
  void Release() {
    if (base_ != nullptr) munmap(base_, bytes_);
    base_ = nullptr;
    count_ = 0;
  }

  unsigned char* base_ = nullptr;
  std::size_t bytes_ = 0, guard_ = 0, size_ = 0;
  int count_ = 0;
};

} // namespace fiber
} // namespace rt
} // namespace kiln

#endif // KILN_CPU_FIBER_CONTEXT_H_
