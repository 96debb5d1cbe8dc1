// Paths as users type them on a command line or in a config file: `~`
// expansion, output files written atomically into folders created on demand,
// and errors that name the path and the reason.
//
// A bare name ("gemm.cubin") lives in the current folder ("."); missing
// parent folders of an output are created (like `mkdir -p`); an input is
// never created. Every error message names the path the user gave and says
// what is wrong with it:
//   cannot write 'x/y.cubin': folder 'x' is not writable (Permission denied)
//   cannot write 'x/y.cubin': 'x' exists and is not a folder
//   cannot create folder 'a/b': 'a' exists and is not a folder
// Status codes: InvalidArgument for an empty path; FailedPrecondition when a
// path that must be a folder is a file or the reverse; PermissionDenied when
// a folder cannot be written (EACCES, EPERM, EROFS); ResourceExhausted when
// the disk is full or a quota is reached; Internal for anything else.
//
// Thread-safety: every function may be called from several threads and
// processes at once. Concurrent writers of one path each write a temporary
// file of their own; the last rename wins, and a reader sees a whole file.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace kiln::util {

// The current user's home folder: $HOME when set and not empty, else the
// password database's entry for the real user id; empty when neither is known.
std::string HomeDirectory();

// "~" and "~/rest" become `home` and `home`/rest; "~user/..." (another user's
// home) and every other path come back unchanged, as does any path when
// `home` is empty. For a flag given as `--out=~/x`, where the shell does not
// expand the `~`.
std::string ExpandHome(const std::string& path, const std::string& home);
// ExpandHome(path, HomeDirectory()).
std::string ExpandHome(const std::string& path);

// The folder that holds the file `path`: "." for a bare name ("gemm.cubin"),
// "/" for "/x", "a/b" for "a/b/c"; trailing slashes of `path` are ignored.
std::string ParentFolder(const std::string& path);

// Makes `dir` a folder, creating it and its missing parents. OK when it is
// one already; whether it can be written is left to the writes (a read-only
// folder is fine for a command that only reads it).
absl::Status EnsureDirectory(const std::string& dir);

// The checks of WriteFileAtomically without the write: creates the missing
// parent folders of `path` and proves that its folder takes a new file (one
// is created and removed). For a command that runs for minutes before it
// writes its outputs, so that a typo fails in a second. Leaves an existing
// `path` untouched.
absl::Status PrepareOutputFile(const std::string& path);

// Writes `bytes` to `path`: parent folders created, the bytes written to a
// temporary file in the same folder (".NAME.tmp-PID-RANDOM"), fsynced and
// renamed over `path`, so that `path` holds either its old content or all of
// `bytes`, never a part. The temporary file is removed on failure; only a
// crash between its creation and the rename leaves it behind. An existing
// `path` that is a device, FIFO or socket (`-o /dev/null`, `/dev/stdout`) is
// written in place instead: a rename would replace the device with a file.
absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes);

} // namespace kiln::util
