//! Metadata: what the heap knows about its memory and its threads, whatever the policy.
//!
//! | file | owns |
//! |---|---|
//! | `size_class.rs` | size classes, run geometry, `classify`, derived constants |
//! | `page_map.rs` | address → chunk or huge record, O(1), without touching memory |
//! | `base.rs` | the heap's own metadata allocator (mmap, never the heap itself) |
//! | `chunk.rs` | 1 MiB chunks and their per-page entries |
//! | `run.rs` | run headers, bitmaps, `RunRef` (the handle policies see) |
//! | `region.rs` | `SmallRegion`: the one validator of a pointer to a small region |
//! | `thread.rs` | thread bindings, thread exit, the registry of live heaps, the arena pool |
//!
//! It may use `platform/` only.

pub mod base;
pub mod chunk;
pub mod page_map;
pub mod region;
pub mod run;
pub mod size_class;
pub mod thread;
