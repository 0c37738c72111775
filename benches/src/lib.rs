//! # alloclab-bench: benchmarks
//!
//! Depends on the `alloclab` facade (engine and policies). Owns the criterion micro
//! benchmarks in `benches/`; process-level comparisons and reports live in `papers/`.
//!
//! Run: `cargo bench -p alloclab-bench --bench alloc_free`.
//!
//! The library part holds what benchmarks share: the allocators under test behind one small
//! interface, so that every benchmark compares the same set the same way.

use alloclab::{Config, Heap};
use std::alloc::{GlobalAlloc, Layout, System};

/// An allocator under test.
pub trait Subject: Sync {
    /// Name used in reports.
    fn name(&self) -> String;
    /// Allocates `layout`.
    ///
    /// # Safety
    /// As `GlobalAlloc::alloc`.
    unsafe fn alloc(&self, layout: Layout) -> *mut u8;
    /// Frees what `alloc` returned.
    ///
    /// # Safety
    /// As `GlobalAlloc::dealloc`.
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout);
}

/// The C library's allocator (glibc here), through `std::alloc::System`.
pub struct SystemAlloc;

impl Subject for SystemAlloc {
    fn name(&self) -> String {
        "system".into()
    }
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// An alloclab heap with config `C`.
pub struct Alloclab<C: Config>(pub Heap<C>);

impl<C: Config> Subject for Alloclab<C> {
    fn name(&self) -> String {
        C::NAME.into()
    }
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        unsafe { GlobalAlloc::alloc(&self.0, layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { GlobalAlloc::dealloc(&self.0, ptr, layout) }
    }
}

fn boxed<C: Config>() -> Box<dyn Subject> {
    Box::new(Alloclab(Heap::<C>::new()))
}

/// The system allocator, then every named config.
pub fn subjects() -> Vec<Box<dyn Subject>> {
    let mut v: Vec<Box<dyn Subject>> = vec![Box::new(SystemAlloc)];
    v.extend(alloclab::for_each_config!(boxed()));
    v
}
