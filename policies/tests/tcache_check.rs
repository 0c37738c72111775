//! `Options::tcache_check` through a real heap: what the thread cache's lock-free `free`
//! takes under each setting, and that what `Light` takes unchecked is still visible to
//! `check_invariants`.

use alloclab_core::{Heap, Options, TcacheCheck};
use alloclab_policies::configs::Using;
use alloclab_policies::{Lifo, Single, ThreadCache};

type Cached = Using<Lifo, Single, ThreadCache>;

fn heap(check: TcacheCheck) -> Heap<Cached> {
    Heap::with_options(Options {
        tcache_check: check,
        ..Options::DEFAULT
    })
}

/// Two live 64-byte regions of `heap`, with the calling thread's cache set up.
fn two_regions(heap: &Heap<Cached>) -> (*mut u8, *mut u8) {
    let warm = heap.malloc(64);
    // SAFETY: a live allocation of `heap`, freed once.
    unsafe { heap.free(warm) };
    let (a, b) = (heap.malloc(64), heap.malloc(64));
    assert!(!a.is_null() && !b.is_null());
    (a, b)
}

#[test]
fn both_settings_take_a_good_free_and_refuse_a_cached_double_free() {
    for check in [TcacheCheck::Full, TcacheCheck::Light] {
        let heap = heap(check);
        let (a, b) = two_regions(&heap);
        // SAFETY: live allocations of `heap`; `a`'s second free is refused without a write.
        unsafe {
            assert!(heap.split().free_fast(a), "{check:?}");
            assert!(
                !heap.split().free_fast(a),
                "{check:?}: a cached double free was taken"
            );
            assert_eq!(
                heap.try_free(a),
                Err(alloclab_core::FreeError::Freed),
                "{check:?}"
            );
            heap.free(b);
        }
        heap.check_invariants().unwrap();
    }
}

#[test]
fn light_takes_an_aligned_interior_pointer_that_full_refuses_and_the_invariants_see_it() {
    let full = heap(TcacheCheck::Full);
    let (a, _) = two_regions(&full);
    // SAFETY: refused without a write (the full checks find no region start there).
    assert!(!unsafe { full.split().free_fast(a.wrapping_add(16)) });
    full.check_invariants().unwrap();

    let light = heap(TcacheCheck::Light);
    let (a, _) = two_regions(&light);
    let inside = a.wrapping_add(16);
    // An unaligned one still goes to the locked path.
    // SAFETY: refused without a write (not 16-byte aligned).
    assert!(!unsafe { light.split().free_fast(a.wrapping_add(8)) });
    // SAFETY: the light checks take it: the cache writes its link and mark into `a`'s bytes
    // 16..32, which this test owns and never reads.
    assert!(unsafe { light.split().free_fast(inside) });
    let found = light.check_invariants().unwrap_err();
    assert!(format!("{found:?}").contains("cache"), "{found:?}");
    // The cache hands it out again (its top), and is then consistent: nothing is flushed, so
    // nothing aborts.
    assert_eq!(light.malloc(64), inside);
    light.check_invariants().unwrap();
}
