//! liballoclab.so: the C allocator whose heap `ALLOCLAB_CONF` chooses at start-up, among the
//! combinations of the built-in policies. Everything is in `alloclab-preload`; a library
//! built for a config of your own is the same line with the config named:
//! `alloclab_preload::export!(MyConfig);`.

alloclab_preload::export!();
