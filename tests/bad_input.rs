//! Bad input gets a clear answer and loses nothing: impossible layouts return null, pointers
//! the heap did not hand out are detected through the page map and bitmap, and `free` of one
//! aborts with a one-line message naming it.

mod common;

use alloclab::{configs, FreeError, Heap};
use common::expect_abort;

#[test]
fn impossible_requests_return_null() {
    let h = Heap::<configs::Lifo>::new();
    assert!(h.allocate(usize::MAX, 8, false).is_null());
    assert!(h.allocate(isize::MAX as usize, 8, false).is_null());
    assert!(h
        .allocate(isize::MAX as usize - 4095, 4096, false)
        .is_null());
    assert!(
        h.allocate(16, 3, false).is_null(),
        "alignment not a power of two"
    );
    assert!(h.allocate(16, 0, false).is_null(), "alignment zero");
    assert!(h.allocate(16, 1 << 62, false).is_null());
    assert!(h.calloc(usize::MAX / 2, 3).is_null(), "calloc overflow");
    assert!(h.calloc(1 << 40, 1 << 30).is_null());
    let p = h.malloc(100);
    // SAFETY: `p` holds 100 bytes.
    unsafe { p.write_bytes(0xab, 100) };
    // SAFETY: `p` is live; a failed realloc leaves it intact.
    let q = unsafe { h.realloc_c(p, usize::MAX) };
    assert!(q.is_null());
    // SAFETY: still live, still 100 bytes.
    assert!((0..100).all(|i| unsafe { *p.add(i) } == 0xab));
    assert_eq!(h.usable_size(p), Ok(112));
    // SAFETY: live.
    unsafe { h.free(p) };
    h.check_invariants().unwrap();
    assert_eq!(h.stats().allocated, 0);
}

#[test]
fn bad_pointers_are_named_not_followed() {
    let h = Heap::<configs::Mrf>::new();
    let mut on_stack = 0u64;
    let foreign = Box::into_raw(Box::new(7u64));
    // Before the heap has allocated anything, everything is foreign.
    // SAFETY: try_free never touches memory it does not own.
    unsafe {
        assert_eq!(h.try_free(foreign.cast()), Err(FreeError::NotOurs));
    }
    let small = h.malloc(48);
    let large = h.malloc(20_000);
    let huge = h.malloc(3 << 20);
    // SAFETY: as above; every call below is rejected before touching the pointee.
    unsafe {
        assert_eq!(
            h.try_free(std::ptr::addr_of_mut!(on_stack).cast()),
            Err(FreeError::NotOurs)
        );
        assert_eq!(h.try_free(foreign.cast()), Err(FreeError::NotOurs));
        assert_eq!(h.try_free(small.add(8)), Err(FreeError::Interior));
        assert_eq!(h.try_free(large.add(4096)), Err(FreeError::Interior));
        assert_eq!(h.try_free(large.add(1)), Err(FreeError::Interior));
        assert_eq!(h.try_free(huge.add(4096)), Err(FreeError::Interior));
        assert_eq!(h.try_free(huge.add(2 << 20)), Err(FreeError::Interior));
        // The chunk header of the chunk holding `small`.
        let header = (small as usize & !((1 << 20) - 1)) as *mut u8;
        assert_eq!(h.try_free(header), Err(FreeError::NeverAllocated));
        // A region of the same run that was never handed out.
        let neighbour = small.add(48 * 5);
        assert_eq!(h.try_free(neighbour), Err(FreeError::NeverAllocated));
        assert_eq!(h.usable_size(neighbour), Err(FreeError::NeverAllocated));
        h.check_invariants().unwrap();
        h.free(small);
        assert_eq!(h.try_free(small), Err(FreeError::Freed), "double free");
        h.free(large);
        assert_eq!(
            h.try_free(large),
            Err(FreeError::Freed),
            "double free of large"
        );
        h.free(huge);
        assert_eq!(
            h.try_free(huge),
            Err(FreeError::NotOurs),
            "a freed huge mapping is gone"
        );
        drop(Box::from_raw(foreign));
    }
    h.check_invariants().unwrap();
    assert_eq!(h.stats().allocated, 0);
}

fn one_line_naming(stderr: &str, call: &str, ptr: usize, why: &str) {
    let expected = format!("alloclab: {call}({ptr:#x}): {why}\n");
    assert_eq!(stderr, expected);
}

#[test]
fn free_of_a_bad_pointer_aborts_with_one_line() {
    let h = Heap::<configs::AddrOrdered>::new();
    let p = h.malloc(64);
    let big = h.malloc(50_000);
    let mut local = 0u8;
    let stack = std::ptr::addr_of_mut!(local);
    let out = expect_abort(|| {
        // SAFETY: rejected (interior pointer) before anything is touched; the child aborts.
        unsafe { h.free(p.add(16)) }
    });
    one_line_naming(
        &out,
        "free",
        p as usize + 16,
        "pointer into the middle of an allocation",
    );
    let out = expect_abort(|| {
        // SAFETY: rejected (not ours) before anything is touched.
        unsafe { h.free(stack) }
    });
    one_line_naming(
        &out,
        "free",
        stack as usize,
        "pointer not allocated by this heap",
    );
    let out = expect_abort(|| {
        // SAFETY: rejected (interior pointer) before anything is touched.
        let _ = unsafe { h.realloc_c(big.add(100), 10) };
    });
    one_line_naming(
        &out,
        "realloc",
        big as usize + 100,
        "pointer into the middle of an allocation",
    );
    // SAFETY: live allocations.
    unsafe {
        h.free(p);
        h.free(big);
    }
    let out = expect_abort(|| {
        // SAFETY: rejected (already free) before anything is touched.
        unsafe { h.free(p) }
    });
    one_line_naming(
        &out,
        "free",
        p as usize,
        "pointer already freed (double free)",
    );
    // The parent's heap is untouched by all of this.
    h.check_invariants().unwrap();
    assert_eq!(h.stats().allocated, 0);
}
