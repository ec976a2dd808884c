//! Links the `walj` binary as a position-dependent executable on Linux with glibc.
//!
//! Every tool call of a session starts `walj hook` twice, so its start-up is paid all day. A
//! PIE walj carries ~10,000 relative relocations that the dynamic loader applies at every
//! start, writing (and so copying) every page that holds a pointer; linked `-no-pie` the
//! linker resolves them once and the loader has ~250 left. Measured on the hook with an
//! empty payload: 1.20 → 1.06 ms wall (400 runs in turns), 159 → 119 page faults. The
//! price is that the binary's own code and data are not placed at a random address (shared
//! libraries, the heap and the stack still are). `WALJ_PIE=1 cargo build` keeps the default.
//! Only binaries are affected (`rustc-link-arg-bins`): the library, tests and benches link as
//! rustc decides.
//!
//! The repository's `.cargo/config.toml` links glibc statically instead, as a static-pie
//! (randomised; it says why), so nothing is added here then (`-no-pie` is only for a dynamic
//! build, e.g. with `RUSTFLAGS=` set empty).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=WALJ_PIE");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let static_crt = features.split(',').any(|f| f == "crt-static");
    let keep_pie = std::env::var_os("WALJ_PIE").is_some_and(|v| v == "1");
    if os == "linux" && env == "gnu" && !keep_pie && !static_crt {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
