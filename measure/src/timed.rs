//! The probe in process: a subject whose every call is timed per thread by
//! `alloclab_probe::timed`, the recorder liballoclab_probe.so uses in front of a program's
//! allocator. The measuring child wraps its subject in it when the plan asks for a probe
//! metric, and reads the figures back with `alloclab_probe::Summary::of_this_process` once
//! the workload's threads are done.

use alloclab_probe::{timed, Kind};
use alloclab_traces::subject::{HeapStats, Subject};

/// `inner`, its calls timed.
pub struct Timed(pub Box<dyn Subject>);

impl Subject for Timed {
    fn name(&self) -> String {
        self.0.name()
    }
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn malloc(&self, size: usize) -> *mut u8 {
        timed(Kind::Malloc, || self.0.malloc(size))
    }
    fn calloc(&self, count: usize, size: usize) -> *mut u8 {
        timed(Kind::Calloc, || self.0.calloc(count, size))
    }
    fn memalign(&self, align: usize, size: usize) -> *mut u8 {
        timed(Kind::Aligned, || self.0.memalign(align, size))
    }
    unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        timed(Kind::Realloc, || unsafe { self.0.realloc(ptr, size) })
    }
    unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: the caller's contract, forwarded.
        timed(Kind::Free, || unsafe { self.0.free(ptr) })
    }
    fn stats(&self) -> HeapStats {
        self.0.stats()
    }
    fn check(&self) -> Result<(), String> {
        self.0.check()
    }
}
