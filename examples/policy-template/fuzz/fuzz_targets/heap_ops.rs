//! Random heap operation sequences on the template's config, checked against a model of live
//! allocations and the heap's invariants: `cargo fuzz run heap_ops` (from this directory).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    alloclab_verify::fuzz::heap_ops::<policy_template::ChunkLifoConfig>(data);
});
