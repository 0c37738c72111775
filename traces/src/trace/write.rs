//! Writing traces: decoded operations back to logalloc's munged text, which logalloc-replay
//! and this crate's parser both read. The generator writes through here too.

use super::{Func, Op, Slot, Trace, NO_SLOT};
use std::io::{self, Write};

/// The munged id of a slot: `slot + 1`, so that `#0`, never allocated, stands for null (a
/// slot referred to while it holds nothing is null in a munged trace).
pub fn munged_id(slot: Slot) -> u64 {
    if slot == NO_SLOT {
        0
    } else {
        u64::from(slot) + 1
    }
}

/// Writes `op` as one munged line for process `pid`, thread `tid`.
pub fn write_line<W: Write + ?Sized>(w: &mut W, pid: u64, tid: u64, op: &Op) -> io::Result<()> {
    let name = op.func.name();
    let result = munged_id(op.slot);
    match op.func {
        Func::Malloc => writeln!(w, "{pid} {tid} {name}({})=#{result}", op.size),
        Func::Valloc => writeln!(w, "{pid} {tid} {name}({})=#{result}", op.size),
        Func::Calloc => writeln!(w, "{pid} {tid} {name}({},{})=#{result}", op.arg, op.size),
        Func::PosixMemalign | Func::AlignedAlloc | Func::Memalign => {
            writeln!(w, "{pid} {tid} {name}({},{})=#{result}", op.arg, op.size)
        }
        Func::Realloc => writeln!(
            w,
            "{pid} {tid} {name}(#{},{})=#{result}",
            munged_id(op.old),
            op.size
        ),
        Func::Free => writeln!(w, "{pid} {tid} {name}(#{result})"),
        Func::JemallocStats => writeln!(w, "{pid} {tid} {name}()"),
    }
}

/// Writes a decoded trace as a munged log of one process (pid 1, threads numbered from 1).
/// Parsing the output gives back the same operations.
pub fn write_munged<W: Write + ?Sized>(trace: &Trace, w: &mut W) -> io::Result<()> {
    for op in trace.ops() {
        write_line(w, 1, u64::from(op.thread) + 1, op)?;
    }
    Ok(())
}
