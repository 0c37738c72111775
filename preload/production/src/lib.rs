//! liballoclab_production.so: the `lifo` config (LIFO runs, thread-local arenas, no thread
//! cache) with no debug check compiled in, so that `profile:`, `poison:` and the other debug
//! options of `ALLOCLAB_CONF` cannot turn anything on: what a malloc built for production
//! (jemalloc's `MALLOC_PRODUCTION`) ships. liballoclab.so with `config:lifo` is the same heap
//! with every check compiled in and off, chosen at run time; the debug-options study measures
//! the two side by side.

alloclab_preload::export!(alloclab_policies::configs::Lifo);
