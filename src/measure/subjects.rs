//! The catalogue of allocators under test: every alloclab named config, the peers, and any
//! config a user registers (`cli::Registry`). An entry makes a fresh subject; the runner makes
//! exactly one per measuring process, so resident sizes belong to one allocator.

use crate::subject::Subject;
use alloclab_core::{Config, Heap};

/// What kind of allocator an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubjectKind {
    /// An alloclab `Heap<C>`.
    Alloclab,
    /// Another allocator, called through its own entry points.
    Peer,
}

/// One allocator that can be measured.
#[derive(Clone)]
pub struct SubjectEntry {
    /// The name given on the command line (`--subjects`, `--config`).
    pub name: String,
    /// What it is.
    pub kind: SubjectKind,
    /// Makes a fresh one (its full description is `Subject::describe`).
    pub make: fn() -> Box<dyn Subject>,
}

fn make_heap<C: Config>() -> Box<dyn Subject> {
    Box::new(Heap::<C>::new())
}

impl SubjectEntry {
    /// An alloclab heap with config `C`, under `name`.
    pub fn alloclab<C: Config>(name: &str) -> SubjectEntry {
        SubjectEntry {
            name: name.to_string(),
            kind: SubjectKind::Alloclab,
            make: make_heap::<C>,
        }
    }
}

fn named<C: Config>() -> SubjectEntry {
    SubjectEntry::alloclab::<C>(C::NAME)
}

/// Every alloclab named config, in `configs::NAMES` order.
pub fn named_configs() -> Vec<SubjectEntry> {
    alloclab_policies::for_each_config!(named())
        .into_iter()
        .collect()
}
