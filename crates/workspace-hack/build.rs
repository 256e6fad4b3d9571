// A build script, so that Cargo builds the `[build-dependencies]` section of this package:
// build scripts and proc macros of the workspace then reuse one build of `syn`, `serde`, ...
fn main() {
    // Without it Cargo reruns the script when any file of the package changes (a checkout that
    // touches its Cargo.toml), and with it every workspace crate that depends on this one.
    println!("cargo::rerun-if-changed=build.rs");
}
