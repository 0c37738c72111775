//! The exported C symbols, as the [`export!`](crate::export) macro that writes them into a
//! `cdylib`: liballoclab.so is `alloclab_preload::export!();` (its heap chosen at start-up by
//! `ALLOCLAB_CONF`), and a user's crate gets a drop-in malloc for its own config with
//! `alloclab_preload::export!(MyConfig);`. Each symbol is one line forwarding to `log.rs` (the
//! semantics of `entry.rs`, plus a line in the allocation log when `log:` is on).
//!
//! glibc's `__libc_malloc` family is exported too, as jemalloc and mimalloc do: a program or
//! library that calls those names directly would otherwise get glibc's heap, and a later
//! `free` of such a block here would abort.
//!
//! The symbols are written into the crate that invokes the macro, not compiled into this
//! library: a library holding `#[no_mangle] malloc` would replace the allocator of every
//! program that links it, including this crate's own unit tests.

/// Writes the C allocator's exported symbols (`malloc`, `free`, ..., `_exit`), the start-up
/// and exit hooks, and the heap installer into the invoking crate, which should be a `cdylib`.
///
/// - `export!()`: the heap is chosen at start-up from `ALLOCLAB_CONF` (`config:`, `reuse:`,
///   `current_run:`, `arenas:`), among the 30 combinations of the built-in policies: this is
///   liballoclab.so.
/// - `export!(C)`: the heap is `Heap<C>` for a config `C: alloclab_core::Config` of yours;
///   every other `ALLOCLAB_CONF` option (statistics, log, `narenas`, `dirty_max`, ...) works
///   as in liballoclab.so, `stats_print` names `C`, and the policy keys are reported as
///   ignored.
/// - `export!(C, "profile:debug,...")`: as `export!(C)`, with a conf built into the library
///   (as jemalloc's `--with-malloc-conf`): its entries apply first, and `ALLOCLAB_CONF`'s
///   after them, so the environment can still override each one. A bad built-in entry is
///   reported at start-up as a bad `ALLOCLAB_CONF` entry is.
///
/// ```text
/// // src/lib.rs of a crate with `[lib] crate-type = ["cdylib"]`
/// alloclab_preload::export!(my_policy::MyConfig);
/// ```
///
/// Invoke it once per `cdylib`, at the crate root.
#[macro_export]
macro_rules! export {
    () => {
        $crate::export!(@symbols $crate::installer::install_selected, "");
    };
    ($config:ty) => {
        $crate::export!(@symbols $crate::installer::install_config::<$config>, "");
    };
    ($config:ty, $conf:literal) => {
        $crate::export!(@symbols $crate::installer::install_config::<$config>, $conf);
    };
    (@symbols $install:expr, $conf:literal) => {
        /// The conf this library was built with, applied before `ALLOCLAB_CONF`.
        #[no_mangle]
        #[doc(hidden)]
        pub fn alloclab_preload_built_in_conf() -> &'static str {
            $conf
        }

        /// The heap installer `init.rs` calls once, at start-up (`installer.rs`).
        #[no_mangle]
        #[doc(hidden)]
        pub fn alloclab_preload_install(
            conf: &$crate::options::Conf,
        ) -> &'static $crate::select::Ops {
            // SAFETY: `init.rs` calls the installer once per process, under its lock, and
            // publishes the table with release ordering.
            unsafe { ($install)(conf) }
        }

        /// Runs when the library is loaded.
        #[used]
        #[link_section = ".init_array"]
        static ALLOCLAB_ON_LOAD: extern "C" fn() = $crate::init::on_load;

        /// Runs at exit, after the program's `atexit` handlers and destructors.
        #[used]
        #[link_section = ".fini_array"]
        static ALLOCLAB_ON_UNLOAD: extern "C" fn() = $crate::init::on_unload;

        /// C `malloc`.
        #[no_mangle]
        pub extern "C" fn malloc(size: usize) -> *mut ::core::ffi::c_void {
            $crate::log::malloc(size)
        }

        /// C `calloc`.
        #[no_mangle]
        pub extern "C" fn calloc(n: usize, size: usize) -> *mut ::core::ffi::c_void {
            $crate::log::calloc(n, size)
        }

        /// C `free`.
        ///
        /// # Safety
        /// C's contract: `p` is null or a live allocation that nothing uses afterwards.
        #[no_mangle]
        pub unsafe extern "C" fn free(p: *mut ::core::ffi::c_void) {
            // SAFETY: forwarded contract.
            unsafe { $crate::log::free(p) }
        }

        /// C `realloc`.
        ///
        /// # Safety
        /// C's contract: `p` is null or a live allocation, not used afterwards unless NULL is returned.
        #[no_mangle]
        pub unsafe extern "C" fn realloc(p: *mut ::core::ffi::c_void, size: usize) -> *mut ::core::ffi::c_void {
            // SAFETY: forwarded contract.
            unsafe { $crate::log::realloc(p, size) }
        }

        /// C `reallocarray`.
        ///
        /// # Safety
        /// As for `realloc`.
        #[no_mangle]
        pub unsafe extern "C" fn reallocarray(p: *mut ::core::ffi::c_void, n: usize, size: usize) -> *mut ::core::ffi::c_void {
            // SAFETY: forwarded contract.
            unsafe { $crate::log::reallocarray(p, n, size) }
        }

        /// POSIX `posix_memalign`.
        ///
        /// # Safety
        /// `out` is valid for writing a pointer.
        #[no_mangle]
        pub unsafe extern "C" fn posix_memalign(out: *mut *mut ::core::ffi::c_void, align: usize, size: usize) -> ::core::ffi::c_int {
            // SAFETY: forwarded contract.
            unsafe { $crate::log::posix_memalign(out, align, size) }
        }

        /// C11 `aligned_alloc`.
        #[no_mangle]
        pub extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut ::core::ffi::c_void {
            $crate::log::aligned_alloc(align, size)
        }

        /// glibc `memalign`.
        #[no_mangle]
        pub extern "C" fn memalign(align: usize, size: usize) -> *mut ::core::ffi::c_void {
            $crate::log::memalign(align, size)
        }

        /// BSD `valloc`.
        #[no_mangle]
        pub extern "C" fn valloc(size: usize) -> *mut ::core::ffi::c_void {
            $crate::log::valloc(size)
        }

        /// glibc `pvalloc`.
        #[no_mangle]
        pub extern "C" fn pvalloc(size: usize) -> *mut ::core::ffi::c_void {
            $crate::log::pvalloc(size)
        }

        /// glibc `malloc_usable_size`.
        #[no_mangle]
        pub extern "C" fn malloc_usable_size(p: *mut ::core::ffi::c_void) -> usize {
            $crate::log::malloc_usable_size(p)
        }

        /// C23 `free_sized`.
        ///
        /// # Safety
        /// As for `free`; `size` is the size that was requested.
        #[no_mangle]
        pub unsafe extern "C" fn free_sized(p: *mut ::core::ffi::c_void, size: usize) {
            // SAFETY: forwarded contract.
            unsafe { $crate::log::free_sized(p, size) }
        }

        /// C23 `free_aligned_sized`.
        ///
        /// # Safety
        /// As for `free`; `align` and `size` are the ones that were requested.
        #[no_mangle]
        pub unsafe extern "C" fn free_aligned_sized(p: *mut ::core::ffi::c_void, align: usize, size: usize) {
            // SAFETY: forwarded contract.
            unsafe { $crate::log::free_aligned_sized(p, align, size) }
        }

        // ---- glibc's own names ----------------------------------------------------------------------

        /// glibc's `__libc_malloc`.
        #[no_mangle]
        pub extern "C" fn __libc_malloc(size: usize) -> *mut ::core::ffi::c_void {
            $crate::log::malloc(size)
        }

        /// glibc's `__libc_calloc`.
        #[no_mangle]
        pub extern "C" fn __libc_calloc(n: usize, size: usize) -> *mut ::core::ffi::c_void {
            $crate::log::calloc(n, size)
        }

        /// glibc's `__libc_free`.
        ///
        /// # Safety
        /// As for `free`.
        #[no_mangle]
        pub unsafe extern "C" fn __libc_free(p: *mut ::core::ffi::c_void) {
            // SAFETY: forwarded contract.
            unsafe { $crate::log::free(p) }
        }

        /// glibc's `__libc_realloc`.
        ///
        /// # Safety
        /// As for `realloc`.
        #[no_mangle]
        pub unsafe extern "C" fn __libc_realloc(p: *mut ::core::ffi::c_void, size: usize) -> *mut ::core::ffi::c_void {
            // SAFETY: forwarded contract.
            unsafe { $crate::log::realloc(p, size) }
        }

        /// glibc's `__libc_memalign`.
        #[no_mangle]
        pub extern "C" fn __libc_memalign(align: usize, size: usize) -> *mut ::core::ffi::c_void {
            $crate::log::memalign(align, size)
        }

        /// glibc's `__libc_valloc`.
        #[no_mangle]
        pub extern "C" fn __libc_valloc(size: usize) -> *mut ::core::ffi::c_void {
            $crate::log::valloc(size)
        }

        /// glibc's `__libc_pvalloc`.
        #[no_mangle]
        pub extern "C" fn __libc_pvalloc(size: usize) -> *mut ::core::ffi::c_void {
            $crate::log::pvalloc(size)
        }

        // ---- process exit without exit handlers -----------------------------------------------------

        /// `_exit`: the allocation log's buffered lines written out first (forked children often end
        /// with `_exit`, which runs no exit handler); then the process ends as glibc's `_exit` ends it.
        /// glibc's own `exit` does not come here (it calls its internal `_exit`).
        #[no_mangle]
        pub extern "C" fn _exit(status: ::core::ffi::c_int) -> ! {
            $crate::log::exit_now(status)
        }

        /// C99 `_Exit`: as `_exit`.
        #[no_mangle]
        pub extern "C" fn _Exit(status: ::core::ffi::c_int) -> ! {
            $crate::log::exit_now(status)
        }

        /// The C++ operators (x86-64 only: see `cxx.rs`).
        #[cfg(target_arch = "x86_64")]
        mod alloclab_cplusplus {
            use $crate::cxx;
            use ::core::ffi::c_void;

            // ---- C++ operator new and delete (Itanium mangled names; see `cxx.rs`) -----------------------
            //
            // The throwing `new`s jump to `cxx.rs`'s assembly loop (which may throw); each is that jump
            // alone. `align_val_t` is a `size_t`; `const nothrow_t&` is a pointer the operators ignore.

            /// `operator new(size_t)`.
            #[no_mangle]
            pub extern "C" fn _Znwm(size: usize) -> *mut c_void {
                $crate::__alloclab_tail_new!(size, 0usize)
            }

            /// `operator new[](size_t)`.
            #[no_mangle]
            pub extern "C" fn _Znam(size: usize) -> *mut c_void {
                $crate::__alloclab_tail_new!(size, 0usize)
            }

            /// `operator new(size_t, const std::nothrow_t&)`.
            #[no_mangle]
            pub extern "C" fn _ZnwmRKSt9nothrow_t(size: usize, _: *const c_void) -> *mut c_void {
                cxx::try_new(size, 0)
            }

            /// `operator new[](size_t, const std::nothrow_t&)`.
            #[no_mangle]
            pub extern "C" fn _ZnamRKSt9nothrow_t(size: usize, _: *const c_void) -> *mut c_void {
                cxx::try_new(size, 0)
            }

            /// `operator new(size_t, std::align_val_t)`.
            #[no_mangle]
            pub extern "C" fn _ZnwmSt11align_val_t(size: usize, align: usize) -> *mut c_void {
                $crate::__alloclab_tail_new!(size, align)
            }

            /// `operator new[](size_t, std::align_val_t)`.
            #[no_mangle]
            pub extern "C" fn _ZnamSt11align_val_t(size: usize, align: usize) -> *mut c_void {
                $crate::__alloclab_tail_new!(size, align)
            }

            /// `operator new(size_t, std::align_val_t, const std::nothrow_t&)`.
            #[no_mangle]
            pub extern "C" fn _ZnwmSt11align_val_tRKSt9nothrow_t(
                size: usize,
                align: usize,
                _: *const c_void,
            ) -> *mut c_void {
                cxx::try_new(size, align)
            }

            /// `operator new[](size_t, std::align_val_t, const std::nothrow_t&)`.
            #[no_mangle]
            pub extern "C" fn _ZnamSt11align_val_tRKSt9nothrow_t(
                size: usize,
                align: usize,
                _: *const c_void,
            ) -> *mut c_void {
                cxx::try_new(size, align)
            }

            /// `operator delete(void*)`.
            ///
            /// # Safety
            /// C++'s contract: `p` is null or from the matching `new`, not used afterwards.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdlPv(p: *mut c_void) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete(p) }
            }

            /// `operator delete[](void*)`.
            ///
            /// # Safety
            /// As for `_ZdlPv`.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdaPv(p: *mut c_void) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete(p) }
            }

            /// `operator delete(void*, const std::nothrow_t&)`.
            ///
            /// # Safety
            /// As for `_ZdlPv`.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdlPvRKSt9nothrow_t(p: *mut c_void, _: *const c_void) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete(p) }
            }

            /// `operator delete[](void*, const std::nothrow_t&)`.
            ///
            /// # Safety
            /// As for `_ZdlPv`.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdaPvRKSt9nothrow_t(p: *mut c_void, _: *const c_void) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete(p) }
            }

            /// `operator delete(void*, size_t)`.
            ///
            /// # Safety
            /// As for `_ZdlPv`; `size` is the size given to `new`.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdlPvm(p: *mut c_void, size: usize) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete_sized(p, size, 0) }
            }

            /// `operator delete[](void*, size_t)`.
            ///
            /// # Safety
            /// As for `_ZdlPvm`.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdaPvm(p: *mut c_void, size: usize) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete_sized(p, size, 0) }
            }

            /// `operator delete(void*, std::align_val_t)`.
            ///
            /// # Safety
            /// As for `_ZdlPv`.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdlPvSt11align_val_t(p: *mut c_void, _align: usize) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete(p) }
            }

            /// `operator delete[](void*, std::align_val_t)`.
            ///
            /// # Safety
            /// As for `_ZdlPv`.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdaPvSt11align_val_t(p: *mut c_void, _align: usize) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete(p) }
            }

            /// `operator delete(void*, size_t, std::align_val_t)`.
            ///
            /// # Safety
            /// As for `_ZdlPvm`.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdlPvmSt11align_val_t(p: *mut c_void, size: usize, align: usize) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete_sized(p, size, align) }
            }

            /// `operator delete[](void*, size_t, std::align_val_t)`.
            ///
            /// # Safety
            /// As for `_ZdlPvm`.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdaPvmSt11align_val_t(p: *mut c_void, size: usize, align: usize) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete_sized(p, size, align) }
            }

            /// `operator delete(void*, std::align_val_t, const std::nothrow_t&)`.
            ///
            /// # Safety
            /// As for `_ZdlPv`.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdlPvSt11align_val_tRKSt9nothrow_t(
                p: *mut c_void,
                _align: usize,
                _: *const c_void,
            ) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete(p) }
            }

            /// `operator delete[](void*, std::align_val_t, const std::nothrow_t&)`.
            ///
            /// # Safety
            /// As for `_ZdlPv`.
            #[no_mangle]
            pub unsafe extern "C" fn _ZdaPvSt11align_val_tRKSt9nothrow_t(
                p: *mut c_void,
                _align: usize,
                _: *const c_void,
            ) {
                // SAFETY: forwarded contract.
                unsafe { cxx::delete(p) }
            }
        }
    };
}
