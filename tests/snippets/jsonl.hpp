// Prelude "jsonl" (docs/stores.md): a function body with a jsonl_store `store`.
#include "support.hpp"

namespace lb = libretto;

void snippet(lb::jsonl_store& store) {
    {
// @snippet
    }
}
