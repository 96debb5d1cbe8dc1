// Frees everything one compile-time evaluation allocated, reference cycles
// included. Lists, tuples and dicts share their storage through reference
// counts (value.h), so a list that contains itself (`l = []; l.append(l)`,
// or a dict reached back through a list) keeps itself alive after the
// evaluation ends; a daemon serving many such programs would grow without
// bound (each one within the evaluation's memory budget).
//
// A ValueHeap, while it lives, is its thread's current heap: every sequence
// NewValueList makes on that thread is linked into it (an intrusive list,
// two pointers per sequence, no allocation) and unlinks itself when freed.
// When the heap is destroyed, after the evaluator that used it, whatever is
// still linked is kept alive only by cycles (nothing outside the evaluation
// holds a compile-time value): each is emptied, which breaks the cycles, and
// the reference counts free the rest.
//
// Thread-safety: a heap belongs to the thread that made it; its values must
// not be shared with another thread (values are per evaluation anyway).
// Heaps nest: the innermost is current, and the previous one is current
// again once it is destroyed.
#pragma once

#include <cstdint>
#include <utility>

#include "compiler/frontend/value.h"

namespace kiln::frontend {

class ValueHeap {
 public:
  ValueHeap();
  // Empties every sequence still linked (see above); a sequence somebody
  // outside the evaluation still holds survives, empty.
  ~ValueHeap();
  ValueHeap(const ValueHeap&) = delete;
  ValueHeap& operator=(const ValueHeap&) = delete;

  // Sequences made under this heap that are still alive.
  int64_t live() const { return live_; }

  // One sequence as NewValueList makes it: the list and its links.
  struct Node : ValueList {
    Node() = default;
    explicit Node(ValueList&& items) : ValueList(std::move(items)) {}
    ValueHeap* heap = nullptr; // null: not linked (made with no current heap)
    Node* prev = nullptr;
    Node* next = nullptr;
  };
  // This thread's current heap, or null.
  static ValueHeap* Current();
  void Link(Node* node);
  void Unlink(Node* node);

 private:
  Node head_; // sentinel of the circular list of linked nodes
  ValueHeap* previous_;
  int64_t live_ = 0;
};

// Sequences alive that were made on this thread (made minus freed here),
// under a heap or not: a test of an evaluation that must free all it made.
int64_t LiveValueLists();

} // namespace kiln::frontend
