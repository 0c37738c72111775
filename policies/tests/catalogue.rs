//! The catalogue (`configs.rs`): every name it lists reaches the types it names, and each
//! named config's values reach that config's own types.

use alloclab_core::{ArenaChoice, Config, FrontEnd, RemoteFree, RunReuse};
use alloclab_policies::configs::{
    Named, Policies, Visit, ARENAS, ARENAS_CHOICES, CONFIG_CHOICES, NAMED, NAMES, REMOTE,
    REMOTE_CHOICES, REUSE, REUSE_CHOICES,
};
use core::any::TypeId;

/// The types a `Policies` reaches.
struct Types;
impl Visit for Types {
    type Output = (TypeId, TypeId, TypeId);
    fn visit<R: RunReuse, A: ArenaChoice, F: FrontEnd>(self) -> Self::Output {
        (TypeId::of::<R>(), TypeId::of::<A>(), TypeId::of::<F>())
    }
}

/// The names the types a `Policies` reaches give themselves in reports.
struct Names;
impl Visit for Names {
    type Output = (String, &'static str, bool, &'static str);
    fn visit<R: RunReuse, A: ArenaChoice, F: FrontEnd>(self) -> Self::Output {
        let mut reuse = String::new();
        R::write_name(&mut reuse).unwrap();
        (reuse, A::NAME, F::CACHE, F::Remote::NAME)
    }
}

#[test]
fn every_choosable_name_reaches_the_policy_of_that_name() {
    let mut combinations = 0;
    for (reuse_name, reuse) in REUSE {
        for current_run in [false, true] {
            for (arenas_name, arenas) in ARENAS {
                for tcache in [false, true] {
                    for (remote_name, remote) in REMOTE {
                        let p = Policies {
                            reuse,
                            current_run,
                            arenas,
                            tcache,
                            remote,
                        };
                        let reuse_expected = if current_run {
                            format!("{reuse_name}+current-run")
                        } else {
                            reuse_name.to_string()
                        };
                        // Without a cache there is nothing to flush: `NoCache`'s is the runs'.
                        let remote_expected = if tcache { remote_name } else { "flush" };
                        assert_eq!(
                            p.visit(Names),
                            (reuse_expected, arenas_name, tcache, remote_expected),
                            "{p:?}"
                        );
                        combinations += 1;
                    }
                }
            }
        }
    }
    assert_eq!(
        combinations,
        REUSE.len() * 2 * ARENAS.len() * 2 * REMOTE.len()
    );
}

fn types_and_name<C: Config>() -> ((TypeId, TypeId, TypeId), &'static str) {
    (
        (
            TypeId::of::<C::Reuse>(),
            TypeId::of::<C::Arenas>(),
            TypeId::of::<C::Front>(),
        ),
        C::NAME,
    )
}

#[test]
fn each_named_config_as_values_reaches_its_own_types() {
    let real = alloclab_policies::for_each_config!(types_and_name());
    assert_eq!(real.len(), NAMED.len());
    for (n, (types, name)) in NAMED.iter().zip(real) {
        let Named {
            name: n_name,
            policies,
        } = *n;
        assert_eq!(n_name, name);
        assert_eq!(policies.visit(Types), types, "{name}");
    }
    assert_eq!(NAMED.map(|n| n.name), NAMES);
}

#[test]
fn the_choice_lists_join_the_tables() {
    assert_eq!(REUSE_CHOICES, REUSE.map(|r| r.0).join("|"));
    assert_eq!(REMOTE_CHOICES, REMOTE.map(|r| r.0).join("|"));
    assert_eq!(ARENAS_CHOICES, ARENAS.map(|a| a.0).join("|"));
    assert_eq!(CONFIG_CHOICES, NAMES.join("|"));
}
