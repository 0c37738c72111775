//! A loop of large allocations, shaped after mimalloc-bench's `malloc-large`: a table of
//! buffers of 2..32 MiB, one replaced at random per step (the old buffer checked and freed,
//! a new one allocated), each new buffer touched every 16 KiB so that its pages are really
//! used. Nearly every buffer is above alloclab's 1 MiB chunk (a huge block), so the step's
//! cost is the allocator's handling of whole mappings: unmapped at every free and mapped
//! (and faulted in) again at every allocation, or kept and reused. Each buffer comes with a
//! few small blocks (its descriptors), as a program's large buffers do.

use super::block::{self, scaled, thread_seed, Block};
use super::{Outcome, Params, Workload};
use alloclab_traces::rng::SplitMix64;
use alloclab_traces::subject::Subject;
use std::time::Instant;

/// Buffers allocated at full size.
const BUFFERS: u64 = 600;
/// At least this many at any scale (with their descriptors, enough calls for a failing
/// allocator to be caught even at a tiny scale).
const MIN_BUFFERS: u64 = 8;
/// Buffers live at once.
const TABLE: usize = 8;
/// Buffer sizes, bytes.
const MIN_SIZE: u64 = 2 << 20;
const MAX_SIZE: u64 = 32 << 20;
/// One byte written (and checked before the free) every this many bytes of a buffer.
const TOUCH: usize = 16 << 10;
/// Small blocks (16..256 B) allocated with each buffer and freed with it.
const DESCRIPTORS: usize = 32;

/// The large-loop workload.
pub struct LargeLoop;

const WHAT: &str = "large-loop";

/// The byte written at `offset` of buffer `id`.
fn touch_byte(id: u64, offset: usize) -> u8 {
    (id as u8) ^ ((offset / TOUCH) as u8).wrapping_mul(31) ^ 0x5a
}

/// The offsets touched in a buffer of `size` bytes: every `TOUCH` bytes, clear of the
/// pattern `Block` writes at its start, middle and end.
fn touched(size: usize) -> impl Iterator<Item = usize> {
    let mid = size / 2;
    (TOUCH..size.saturating_sub(64))
        .step_by(TOUCH)
        .filter(move |&off| off + 64 < mid || off > mid + 64)
}

/// A buffer and its descriptors.
struct Buffer {
    big: Block,
    small: Vec<Block>,
}

fn make(s: &dyn Subject, r: &mut SplitMix64, id: &mut u64) -> Result<(Buffer, u64), String> {
    *id += 1;
    let size = r.between(MIN_SIZE, MAX_SIZE) as usize;
    let big = block::alloc(s, size, *id, WHAT)?;
    let p = big.addr as *mut u8;
    for off in touched(size) {
        // SAFETY: `off < size`, inside the fresh buffer.
        unsafe { p.add(off).write(touch_byte(big.id, off)) };
    }
    let mut small = Vec::with_capacity(DESCRIPTORS);
    for _ in 0..DESCRIPTORS {
        *id += 1;
        small.push(block::alloc(s, r.between(16, 256) as usize, *id, WHAT)?);
    }
    Ok((Buffer { big, small }, 1 + DESCRIPTORS as u64))
}

/// Checks and frees a buffer and its descriptors; returns the calls made.
///
/// # Safety
/// `b`'s blocks are live allocations of `s`, not used afterwards.
unsafe fn release(s: &dyn Subject, b: Buffer) -> Result<u64, String> {
    let Buffer { big, small } = b;
    let p = big.addr as *const u8;
    for off in touched(big.size) {
        // SAFETY: `off < size`, inside the live buffer.
        let got = unsafe { p.add(off).read() };
        let want = touch_byte(big.id, off);
        if got != want {
            return Err(format!(
                "{WHAT}: buffer {} ({} bytes at {:#x}) has byte {off} = {got:#04x}, written as \
                 {want:#04x}",
                big.id, big.size, big.addr
            ));
        }
    }
    let n = small.len() as u64;
    // SAFETY: the caller's contract.
    unsafe {
        big.verify_and_free(s, WHAT)?;
        for d in small {
            d.verify_and_free(s, WHAT)?;
        }
    }
    Ok(1 + n)
}

impl Workload for LargeLoop {
    fn name(&self) -> &str {
        "large-loop"
    }

    fn describe(&self) -> &str {
        "malloc-large-like: a table of 8 buffers of 2..32 MiB, one replaced at random per \
         step, each new one touched every 16 KiB (with 32 small descriptors apiece)"
    }

    fn threaded(&self) -> bool {
        false
    }

    fn run(&self, subject: &dyn Subject, params: &Params) -> Result<Outcome, String> {
        let buffers = scaled(BUFFERS, params.scale).max(MIN_BUFFERS);
        let mut r = SplitMix64::new(thread_seed(params.seed, 0));
        let mut id = 0u64;
        let mut ops = 0;
        let mut table: Vec<Option<Buffer>> = (0..TABLE).map(|_| None).collect();
        let start = Instant::now();
        let mut result = Ok(());
        for _ in 0..buffers {
            let i = r.below(TABLE as u64) as usize;
            if let Some(old) = table[i].take() {
                // SAFETY: live blocks of `subject`, taken out of the table.
                match unsafe { release(subject, old) } {
                    Ok(n) => ops += n,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            match make(subject, &mut r, &mut id) {
                Ok((b, n)) => {
                    table[i] = Some(b);
                    ops += n;
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        for b in table.into_iter().flatten() {
            // SAFETY: live blocks of `subject`, each freed once.
            match unsafe { release(subject, b) } {
                Ok(n) => ops += n,
                Err(e) => {
                    result = result.and(Err(e));
                }
            }
        }
        result?;
        Ok(Outcome {
            ops,
            elapsed: start.elapsed(),
        })
    }
}
