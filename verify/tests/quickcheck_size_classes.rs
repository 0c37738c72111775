//! quickcheck properties of the size-class mapping (`alloclab_core::size_class::classify`):
//! covering (the class holds the request, aligned as asked), minimal (no smaller small class
//! would), monotone in the request, and bounded waste.
#![cfg(not(loom))]

use alloclab_core::size_class::{
    bin, classify, usable, SizeClass, BINS, CHUNK, LARGE_MAX, MAX_ALIGN, NBINS, PAGE, QUANTUM,
    QUANTUM_MAX, SMALL_MAX, WIDE_STEP,
};
use quickcheck::{QuickCheck, TestResult};

/// A request size spread over every range: tiny, small, large, huge, absurd.
fn size(raw: u64) -> usize {
    let r = raw as usize;
    match raw % 8 {
        0..=2 => r % (SMALL_MAX + 1),
        3..=4 => r % (LARGE_MAX + PAGE + 1),
        5 => r % (64 << 20),
        6 => usize::MAX - r % 4096,
        _ => r,
    }
}

fn align(raw: u8) -> usize {
    1 << (raw % 42)
}

fn qc() -> QuickCheck {
    QuickCheck::new().tests(alloclab_verify::machine::cases(2000) as u64)
}

#[test]
fn every_request_gets_a_class_that_holds_it() {
    fn prop(raw: u64, a: u8) -> TestResult {
        let (s, al) = (size(raw), align(a));
        match classify(s, al) {
            None => TestResult::from_bool(s > isize::MAX as usize - al || al > MAX_ALIGN),
            Some(c) => {
                let ok = usable(c) >= s.max(1)
                    && match c {
                        SizeClass::Small(i) => i < NBINS && bin(i).region_align() >= al,
                        SizeClass::Large(p) => p >= 1 && p * PAGE <= LARGE_MAX,
                        SizeClass::Huge(b) => b % PAGE == 0 && b > 0,
                    };
                TestResult::from_bool(ok)
            }
        }
    }
    qc().quickcheck(prop as fn(u64, u8) -> TestResult);
}

#[test]
fn small_classes_are_the_smallest_that_fit() {
    fn prop(raw: u64, a: u8) -> TestResult {
        let (s, al) = ((raw as usize) % (SMALL_MAX + 1), 1usize << (a % 13));
        let Some(SizeClass::Small(i)) = classify(s, al) else {
            return TestResult::discard();
        };
        let smaller_fits = BINS[..i]
            .iter()
            .any(|b| b.size as usize >= s.max(1) && b.region_align() >= al);
        TestResult::from_bool(!smaller_fits)
    }
    qc().quickcheck(prop as fn(u64, u8) -> TestResult);
}

#[test]
fn classes_grow_with_the_request() {
    fn prop(x: u64, y: u64, a: u8) -> TestResult {
        let (s1, s2) = (size(x), size(y));
        let (lo, hi) = (s1.min(s2), s1.max(s2));
        let al = 1usize << (a % 22);
        match (classify(lo, al), classify(hi, al)) {
            (Some(c1), Some(c2)) => TestResult::from_bool(usable(c1) <= usable(c2)),
            (_, None) => TestResult::discard(),
            (None, Some(_)) => TestResult::failed(),
        }
    }
    qc().quickcheck(prop as fn(u64, u64, u8) -> TestResult);
}

#[test]
fn waste_is_bounded() {
    fn prop(raw: u64) -> TestResult {
        let s = size(raw);
        let Some(c) = classify(s, QUANTUM) else {
            return TestResult::discard();
        };
        let waste = usable(c) - s.max(1);
        let bound = match c {
            SizeClass::Small(_) if s <= QUANTUM_MAX => QUANTUM,
            SizeClass::Small(_) => WIDE_STEP,
            SizeClass::Large(_) | SizeClass::Huge(_) => PAGE,
        };
        TestResult::from_bool(waste < bound)
    }
    qc().quickcheck(prop as fn(u64) -> TestResult);
}

#[test]
fn boundaries_are_exact() {
    assert_eq!(classify(SMALL_MAX, 1), Some(SizeClass::Small(NBINS - 1)));
    assert_eq!(classify(SMALL_MAX + 1, 1), Some(SizeClass::Large(1)));
    assert!(matches!(
        classify(LARGE_MAX + 1, 1),
        Some(SizeClass::Huge(_))
    ));
    assert!(matches!(classify(1, CHUNK), Some(SizeClass::Huge(_))));
}
