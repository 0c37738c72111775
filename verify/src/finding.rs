//! `Finding`: what a check found, and which check found it.
//!
//! Every check in this crate reports through this type, so that a test can assert not only
//! *that* a seeded bug is caught but *by which check* (see `tests/seeded_*.rs`).

use alloclab_core::ViolationKind;
use core::fmt;

/// The check that produced a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// `Heap::check_invariants()` / `Heap::check_live()` reported this violation.
    Invariants(ViolationKind),
    /// The executable reference model of the run-reuse policy predicted another run.
    ReuseModel,
    /// The model of live allocations and runs (addresses, alignment, usable size, lowest free
    /// region, double-free detection).
    LiveModel,
    /// An allocation's contents changed while it was live (or calloc memory was not zero).
    Contents,
    /// A statistic disagrees with the model.
    Stats,
    /// An arena-choice property (stability across sizes, arenas handed back at thread exit).
    ArenaChoice,
    /// The generated operations never exercised a dimension of the run-reuse protocol (see
    /// `Coverage`): the kit cannot vouch for what it never tried.
    Coverage,
    /// The policy, the engine or the reference model panicked while the operations ran (the
    /// detail quotes the panic's message). The kit catches the panic so that it can shrink the
    /// operations that lead to it and report them like any other finding.
    Panic,
}

/// A failed check: which check, at which step, and a precise description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The check that failed.
    pub check: Check,
    /// The operation index at which it failed (0 for checks outside an operation sequence).
    pub step: usize,
    /// What exactly was wrong.
    pub detail: String,
}

impl Finding {
    /// A finding of `check` at `step`.
    pub fn new(check: Check, step: usize, detail: impl Into<String>) -> Self {
        Finding {
            check,
            step,
            detail: detail.into(),
        }
    }

    /// Whether this is an invariant violation of the given kind (payloads compared loosely:
    /// only the variant matters).
    pub fn is_violation(&self, kind: ViolationKind) -> bool {
        matches!(self.check, Check::Invariants(k)
            if core::mem::discriminant(&k) == core::mem::discriminant(&kind))
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "step {}: {:?}: {}", self.step, self.check, self.detail)
    }
}

impl std::error::Error for Finding {}
