// Default sanitizer options, linked into every executable of the sanitizer
// and fuzz builds (KILN_SANITIZE / KILN_FUZZ; see CMakeLists.txt). They apply
// however a binary is started: ctest, a fuzz campaign, kilnd spawning
// kiln-worker, a developer's shell. ASAN_OPTIONS in the environment still
// overrides them.
//
// intercept_tls_get_addr=0: clang 14's runtime (Debian 12) tracks dynamic TLS
// blocks by intercepting __tls_get_addr. After NVRTC has built a cubin in the
// process, that record holds a garbage block (seen as "DTLS 8 at
// 0x000000003824-0x002000004926" with LSAN_OPTIONS=verbosity=1), and
// LeakSanitizer's tracer dies on it at exit ("Tracer caught signal 11"),
// depending on nothing more than the length of argv. Without the interceptor
// leak checking stays on; the static TLS block of each thread is still scanned.

// The runtime's hook: its name is reserved to the implementation by design.
// NOLINTNEXTLINE(readability-identifier-naming,bugprone-reserved-identifier)
extern "C" const char* __asan_default_options();

// NOLINTNEXTLINE(readability-identifier-naming,bugprone-reserved-identifier)
extern "C" const char* __asan_default_options() { return "intercept_tls_get_addr=0"; }
