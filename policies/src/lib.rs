//! # alloclab-policies: the concrete policies, one file each
//!
//! Depends only on `alloclab-core` (the traits `RunReuse`, `ArenaChoice`, `Config`).
//!
//! Run reuse (which non-full run serves the next small allocation):
//! - [`AddrOrdered`] (`addr_ordered.rs`): lowest address first, an intrusive treap;
//! - [`Lifo`] (`lifo.rs`): last non-full run first, frees do not reorder;
//! - [`Mrf`] (`mrf.rs`): most recently freed-into run first;
//! - [`CurrentRun<P>`] (`current_run.rs`): any of them plus a cached current run;
//! - [`InChunkMap<P>`] (`in_chunk_map.rs`): any of them with its links in the chunk map
//!   ([`MrfChunkMap`] is `InChunkMap<Mrf>`, the seed's fifth variant).
//!
//! `list.rs` is the intrusive run list that `Lifo` and `Mrf` share.
//!
//! Arena choice (which arena serves the current thread):
//! [`Single`], [`ThreadLocal`], [`RoundRobin`], [`PerCpu`], [`Hashed`], one file each; and
//! [`LargeResetsShared`], the thread-arenas seed's bug kept as a variant to measure.
//!
//! Front end (what sits in front of the arenas for small requests):
//! [`NoCache`] (`no_cache.rs`), [`ThreadCache`] (`thread_cache.rs`), one file each; and how
//! a thread cache's flushed blocks return to their arenas (remote free): [`FlushToRuns`]
//! (`flush_to_runs.rs`), [`Mailbox`] (`mailbox.rs`).
//!
//! Named configurations combining them are in [`configs`], declared once with the names that
//! choose among the policies at run time (`catalogue.rs` is what that declaration expands to).

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod addr_ordered;
mod current_run;
mod in_chunk_map;
mod lifo;
mod list;
mod mrf;

mod hashed;
mod large_resets_shared;
mod per_cpu;
mod round_robin;
mod single;
mod thread_local;

mod flush_to_runs;
mod mailbox;
mod no_cache;
mod thread_cache;

#[macro_use]
mod catalogue;
pub mod configs;

pub use addr_ordered::{AddrOrdered, Treap, TreeLinks};
pub use current_run::{CurrentBin, CurrentRun};
pub use flush_to_runs::FlushToRuns;
pub use hashed::Hashed;
pub use in_chunk_map::{InChunkMap, MrfChunkMap};
pub use large_resets_shared::LargeResetsShared;
pub use lifo::Lifo;
pub use list::{ListLinks, ListRun, RunList};
pub use mailbox::Mailbox;
pub use mrf::Mrf;
pub use no_cache::NoCache;
pub use per_cpu::PerCpu;
pub use round_robin::RoundRobin;
pub use single::Single;
pub use thread_cache::ThreadCache;
pub use thread_local::ThreadLocal;
