//! The front end: what sits between a thread and the arenas for small requests
//! (`FrontEnd::CACHE`). With `NoCache` nothing does and the heap goes to the back end at once;
//! with a thread cache, `tcache/` keeps each thread's regions per size class, its binding to
//! the thread, its fills and flushes, its statistics and its checks.
//!
//! The front end sees the heap behind it through [`Back`], a narrow interface the heap
//! implements: the page map, the metadata allocator, the arena for a request, the heap's id
//! and the front end's own shared state. It names no type of the heap, so it sits below it.
//!
//! It may use `platform/`, `meta/`, `policy/`, `debug/` and `back/`.

pub(crate) mod tcache;

use crate::back::arena::Arena;
use crate::meta::base::Base;
use crate::meta::page_map::PageMap;
use crate::policy::Config;
use core::marker::PhantomData;
use tcache::CachePool;

/// What the front end needs of the heap behind it. Implemented by the heap's shared state;
/// every method is a field read or the heap's own arena choice, inlined.
pub(crate) trait Back<C: Config> {
    /// The heap's id (thread bindings are per heap).
    fn heap_id(&self) -> u64;
    /// The heap's page map: address → chunk.
    fn page_map(&self) -> &PageMap;
    /// The heap's metadata allocator (a new thread's cache comes from it).
    fn base(&self) -> &Base;
    /// The arena that serves a request of `size` bytes from the calling thread (created on
    /// first use); `None` if the OS refused memory.
    fn arena_for(&self, size: usize) -> Option<&Arena<C>>;
    /// The caches' shared state: the pool of caches, their bounds, the mark's secret.
    fn caches(&self) -> &CachePool;
    /// Whether small requests go through the cache (no debug option on regions is on).
    fn cache_on(&self) -> bool;
}

/// The thread-cache front end of a heap of config `C`: its paths, as functions of the
/// [`Back`] behind it (the state is the caches' own: `CachePool` and each thread's `Tcache`).
pub(crate) struct Front<C>(PhantomData<C>);
