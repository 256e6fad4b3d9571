//! One test binary per crate (docs/building.md, "One test binary per crate"): every file
//! directly in a crate's `tests/` (and every `tests/DIR/main.rs`) is a binary of its own that
//! links the crate's whole test tree, so a crate's integration tests are modules of
//! `tests/it/`. Only the targets named here stand apart, each for the reason given.

use crate::common;

/// The crates whose integration tests are one binary, and the targets allowed beside it.
const ONE_BINARY: &[(&str, &[&str])] = &[
    // Reads the process's resident memory: nothing else may run in its process.
    ("crates/lab-apiserver", &["redteam_watch_memory.rs"]),
    ("crates/kubectl-netrollout", &[]),
    ("crates/testkit", &[]),
    ("crates/render", &[]),
    // Behind the `vm` feature, built only for the VM suite (hack/test.d/55-frr-vm.sh).
    ("crates/frr", &["vm.rs"]),
    // `vm.rs`: behind the `vm` feature with its own `main` (it becomes the agent inside the VM), built only
    // for the VM suite (hack/test.d/56-agent-frr-vm.sh).
    // `netlink_lock.rs` holds the kernel's netlink lock on purpose (it removes a namespace of
    // thousands of links): in a binary of its own it never runs beside the other agent tests
    // (cargo runs test binaries one after another), so it slows none of them.
    ("crates/agent", &["vm.rs", "netlink_lock.rs"]),
];

#[test]
fn each_crate_links_its_integration_tests_into_one_binary_besides_the_named_exceptions() {
    let repo = common::repo();
    let mut wrong = vec![];
    for (krate, allowed) in ONE_BINARY {
        let tests = repo.join(krate).join("tests");
        if !tests.join("it/main.rs").is_file() {
            wrong.push(format!("{krate}: no tests/it/main.rs"));
        }
        for entry in std::fs::read_dir(&tests).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let binary = if path.is_dir() {
                name != "it" && path.join("main.rs").is_file()
            } else {
                name.ends_with(".rs") && !allowed.contains(&name.as_str())
            };
            if binary {
                wrong.push(format!(
                    "{krate}/tests/{name} is a test binary of its own: make it a module of \
                     tests/it/main.rs (or name it here with the reason it must stand apart)"
                ));
            }
        }
        for name in *allowed {
            if !tests.join(name).is_file() {
                wrong.push(format!("{krate}/tests/{name} is named here but is gone"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
