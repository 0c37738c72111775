//! A policy author's own command line: `Registry::builtin().add::<C>("name")` makes `C`
//! selectable by name beside the built-in configs and peers, with its own description.

use alloclab::cli::Registry;
use alloclab::policies::configs::Using;
use alloclab::policies::{Lifo, Single};
use std::process::ExitCode;

type Mine = Using<Lifo, Single>;

#[test]
fn a_registered_config_is_found_beside_the_builtin_ones() {
    let r = Registry::builtin().add::<Mine>("mine");
    let names: Vec<&str> = r.entries().iter().map(|e| e.name.as_str()).collect();
    for builtin in ["addr-ordered", "lifo", "mrf", "mrf-current", "system"] {
        assert!(names.contains(&builtin), "{names:?}");
    }
    let mine = r.find("mine").expect("registered");
    let subject = (mine.make)();
    assert!(
        subject.describe().contains("arenas: single"),
        "its own description: {}",
        subject.describe()
    );
}

#[test]
fn replay_takes_a_registered_config() {
    let code = Registry::builtin()
        .add::<Mine>("mine")
        .main_from(["alloclab", "replay", "--config", "mine", "--json"]);
    assert_eq!(code, ExitCode::SUCCESS);
    let code = Registry::builtin().main_from(["alloclab", "replay", "--config", "mine"]);
    assert_ne!(code, ExitCode::SUCCESS, "unknown without registration");
}

#[test]
#[should_panic(expected = "already taken")]
fn a_name_is_registered_once() {
    let _ = Registry::builtin().add::<Mine>("lifo");
}
