//! The `catalogue!` macro: what one declaration of the selectable policies and of the named
//! configurations (in `configs.rs`) expands to.
//!
//! Everything that names a policy or a config comes from that one declaration, so a name
//! cannot be accepted by liballoclab.so's `ALLOCLAB_CONF` without being built, nor built
//! without being listed by its `help`. It writes:
//!
//! - the `Reuse`, `Arenas` and `Remote` enums, their `(name, value)` tables (`REUSE`,
//!   `ARENAS`, `REMOTE`) and their names joined by `|` (`REUSE_CHOICES`, `ARENAS_CHOICES`,
//!   `REMOTE_CHOICES`);
//! - each named config's type (`impl Config`), `NAMES`, `NAMED` (the same configs as values)
//!   and `CONFIG_CHOICES`;
//! - `Policies::visit`, the static match from values to the concrete types;
//! - the exported `for_each_config!`.
//!
//! A named config names its policies by the enum variants, so its type and its values come
//! from the same tokens and cannot disagree.

macro_rules! catalogue {
    // The entry rule comes last: it only supplies the `$` that the exported macro's own
    // metavariables need (a `macro_rules!` cannot write one otherwise).
    (
        @with_dollar ($d:tt)
        reuse {
            $( $(#[$reuse_doc:meta])* $reuse:ident = $reuse_name:literal => $reuse_ty:ty, )+
        }
        arenas {
            $( $(#[$arenas_doc:meta])* $arenas:ident = $arenas_name:literal => $arenas_ty:ty, )+
        }
        remote {
            $( $(#[$remote_doc:meta])* $remote:ident = $remote_name:literal => $remote_ty:ty, )+
        }
        configs {
            $(
                $(#[$config_doc:meta])*
                $config:ident = $config_name:literal: reuse $config_reuse:ident,
                current_run $config_current_run:tt, arenas $config_arenas:ident,
                tcache $config_tcache:tt, remote $config_remote:ident;
            )+
        }
    ) => {
        /// A run-reuse policy that can be chosen by name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Reuse {
            $( $(#[$reuse_doc])* $reuse, )+
        }

        /// Every choosable run-reuse policy with its name, in declaration order.
        pub const REUSE: [(&str, Reuse); catalogue!(@count $($reuse)+)] =
            [ $( ($reuse_name, Reuse::$reuse), )+ ];

        /// The names of `REUSE`, joined by `|` (as option help lists choices).
        pub const REUSE_CHOICES: &str = catalogue!(@join $($reuse_name)+);

        /// An arena-choice policy that can be chosen by name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Arenas {
            $( $(#[$arenas_doc])* $arenas, )+
        }

        /// Every choosable arena-choice policy with its name, in declaration order.
        pub const ARENAS: [(&str, Arenas); catalogue!(@count $($arenas)+)] =
            [ $( ($arenas_name, Arenas::$arenas), )+ ];

        /// The names of `ARENAS`, joined by `|`.
        pub const ARENAS_CHOICES: &str = catalogue!(@join $($arenas_name)+);

        /// A remote-free policy (how a thread cache's flushes reach their arenas) that can be
        /// chosen by name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Remote {
            $( $(#[$remote_doc])* $remote, )+
        }

        /// Every choosable remote-free policy with its name, in declaration order.
        pub const REMOTE: [(&str, Remote); catalogue!(@count $($remote)+)] =
            [ $( ($remote_name, Remote::$remote), )+ ];

        /// The names of `REMOTE`, joined by `|`.
        pub const REMOTE_CHOICES: &str = catalogue!(@join $($remote_name)+);

        // Each variant's type, by the variant's name: the one place the type is spelled, for
        // the named configs and the dispatch alike.
        mod reuse_type {
            $( pub(super) type $reuse = $reuse_ty; )+
        }
        mod arenas_type {
            $( pub(super) type $arenas = $arenas_ty; )+
        }
        mod remote_type {
            $( pub(super) type $remote = $remote_ty; )+
        }

        $(
            $(#[$config_doc])*
            pub struct $config;
            impl Config for $config {
                type Reuse = catalogue!(@reuse $config_current_run reuse_type::$config_reuse);
                type Arenas = arenas_type::$config_arenas;
                type Front = catalogue!(@front $config_tcache remote_type::$config_remote);
                const NAME: &'static str = $config_name;
            }
        )+

        /// The names of the named configurations, in report order.
        pub const NAMES: [&str; catalogue!(@count $($config)+)] = [ $( $config_name, )+ ];

        /// `NAMES` joined by `|`.
        pub const CONFIG_CHOICES: &str = catalogue!(@join $($config_name)+);

        /// The named configurations as values, in `NAMES` order: what `Policies::visit` needs to
        /// reach each one's types at run time.
        pub const NAMED: [Named; catalogue!(@count $($config)+)] = [
            $(
                Named {
                    name: $config_name,
                    policies: Policies {
                        reuse: Reuse::$config_reuse,
                        current_run: $config_current_run,
                        arenas: Arenas::$config_arenas,
                        tcache: $config_tcache,
                        remote: Remote::$config_remote,
                    },
                },
            )+
        ];

        impl Policies {
            /// Calls `v.visit::<R, A, F>()` with the types these policies name: one static
            /// match, so that what `v` builds is monomorphized for them.
            pub fn visit<V: Visit>(self, v: V) -> V::Output {
                if !self.tcache {
                    return self.visit_arenas::<$crate::NoCache, V>(v);
                }
                match self.remote {
                    $(
                        Remote::$remote => self.visit_arenas::<
                            catalogue!(@front true remote_type::$remote), V
                        >(v),
                    )+
                }
            }

            fn visit_arenas<F: FrontEnd, V: Visit>(self, v: V) -> V::Output {
                match self.arenas {
                    $( Arenas::$arenas => self.visit_reuse::<arenas_type::$arenas, F, V>(v), )+
                }
            }

            fn visit_reuse<A: ArenaChoice, F: FrontEnd, V: Visit>(self, v: V) -> V::Output {
                match (self.reuse, self.current_run) {
                    $(
                        (Reuse::$reuse, false) => {
                            v.visit::<catalogue!(@reuse false reuse_type::$reuse), A, F>()
                        }
                        (Reuse::$reuse, true) => {
                            v.visit::<catalogue!(@reuse true reuse_type::$reuse), A, F>()
                        }
                    )+
                }
            }
        }

        /// Calls `$f::<Config>($args...)` for each named configuration, in `NAMES` order; the
        /// results form an array.
        ///
        /// ```
        /// fn name<C: alloclab_core::Config>() -> &'static str { C::NAME }
        /// assert_eq!(alloclab_policies::for_each_config!(name()), alloclab_policies::configs::NAMES);
        /// ```
        #[macro_export]
        macro_rules! for_each_config {
            ($d f:ident $d args:tt) => {
                [ $( $d f::<$crate::configs::$config> $d args, )+ ]
            };
        }
    };

    (@reuse false $reuse:ty) => { $reuse };
    (@reuse true $reuse:ty) => { $crate::CurrentRun<$reuse> };
    (@front false $remote:ty) => { $crate::NoCache };
    (@front true $remote:ty) => { $crate::ThreadCache<{ 1024 * 1024 }, $remote> };
    (@count $($item:tt)+) => { 0 $( + catalogue!(@one $item) )+ };
    (@one $item:tt) => { 1 };
    (@join $first:literal $($rest:literal)*) => { concat!($first $(, "|", $rest)*) };

    ($($declaration:tt)+) => { catalogue!(@with_dollar ($) $($declaration)+); };
}
