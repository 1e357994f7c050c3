//! Regenerates `broker/src/grpc/proto/apache.rocketmq.v2.rs` from the vendored protos
//! in `broker/proto/apache/rocketmq/v2/`:
//!
//! ```sh
//! cargo run --manifest-path broker/proto/generate/Cargo.toml
//! ```
//!
//! The protos are parsed by `protox` (no `protoc` needed) and turned into prost
//! messages plus the tonic server trait and client by `tonic-prost-build`; the output
//! is run through `rustfmt` so that `cargo fmt --check` accepts it as committed.

use std::path::PathBuf;
use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let out_dir = proto_root.join("../src/grpc/proto");
    std::fs::create_dir_all(&out_dir)?;
    let files = protox::compile(["apache/rocketmq/v2/service.proto"], [&proto_root])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        // The client without tonic's transport: the broker builds tonic without it.
        .build_transport(false)
        // Message bodies as `bytes::Bytes`: handed to the store without a copy.
        .bytes(".")
        .out_dir(&out_dir)
        .compile_fds(files)?;
    let generated = out_dir.join("apache.rocketmq.v2.rs");
    let status = Command::new("rustfmt")
        .args(["--edition", "2021"])
        .arg(&generated)
        .status()?;
    if !status.success() {
        return Err(format!("rustfmt failed on {}", generated.display()).into());
    }
    println!("wrote {}", generated.display());
    Ok(())
}
