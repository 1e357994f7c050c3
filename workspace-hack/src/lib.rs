//! No code: this package only pins the features of shared dependencies (its
//! `Cargo.toml` says why).
