use alloclab::{configs, Heap};

#[test]
fn smoke() {
    let h: Heap<configs::Lifo> = Heap::new();
    let mut v = Vec::new();
    for i in 0..10000usize {
        let sz = (i * 37) % 5000 + 1;
        let p = h.malloc(sz);
        assert!(!p.is_null());
        unsafe { std::ptr::write_bytes(p, (i & 0xff) as u8, sz) };
        v.push((p, sz, i));
    }
    h.check_invariants().unwrap();
    for &(p, sz, i) in v.iter().step_by(2) {
        for k in 0..sz { assert_eq!(unsafe { *p.add(k) }, (i & 0xff) as u8); }
        unsafe { h.free(p) };
    }
    h.check_invariants().unwrap();
    let st = h.stats();
    println!("{st:?}");
    for &(p, _, _) in v.iter().skip(1).step_by(2) {
        unsafe { h.free(p) };
    }
    h.check_invariants().unwrap();
    let big = h.malloc(5 << 20);
    assert!(!big.is_null());
    let big2 = unsafe { h.realloc_c(big, 9 << 20) };
    assert!(!big2.is_null());
    h.check_invariants().unwrap();
    unsafe { h.free(big2) };
    h.check_invariants().unwrap();
    assert_eq!(h.stats().allocated, 0);
}
