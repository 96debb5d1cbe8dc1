#include "compiler/frontend/value_heap.h"

#include <utility>

namespace kiln::frontend {
namespace {

thread_local ValueHeap* current_heap = nullptr;

} // namespace

ValueHeap::ValueHeap() : previous_(current_heap) {
  head_.prev = head_.next = &head_;
  current_heap = this;
}

ValueHeap::~ValueHeap() {
  // The evaluation is over: what is still linked is held by cycles. Empty
  // each one; freeing its items may free other linked nodes (they unlink
  // themselves) and this node too, so the loop always starts from the head.
  while (head_.next != &head_) {
    Node* node = head_.next;
    Unlink(node);
    ValueList items;
    items.swap(*node);
  } // `items` goes here, and with it every list only the cycle kept
  current_heap = previous_;
}

ValueHeap* ValueHeap::Current() { return current_heap; }

void ValueHeap::Link(Node* node) {
  node->heap = this;
  node->prev = &head_;
  node->next = head_.next;
  head_.next->prev = node;
  head_.next = node;
  ++live_;
}

void ValueHeap::Unlink(Node* node) {
  node->prev->next = node->next;
  node->next->prev = node->prev;
  node->prev = node->next = nullptr;
  node->heap = nullptr;
  --live_;
}

} // namespace kiln::frontend
