//! `mqbench`: the benchmark producer/consumer, built on the SDK, for Vostok and any
//! RocketMQ-protocol broker.
//!
//! * [`args`]: the command line; [`run`]: the three commands.
//! * [`produce`] and [`consume`]: the two sides; [`rate`]: `--rate` pacing.
//! * Measuring: [`meter`] (counters), [`histogram`] (latencies), [`sequence`] (lost
//!   and duplicates), [`monitor`] and [`procfs`] (broker and process figures).
//! * Output: [`progress`] (the line each second), [`report`] (summary and JSON).

pub mod args;
pub mod consume;
pub mod histogram;
pub mod meter;
pub mod monitor;
pub mod procfs;
pub mod produce;
pub mod progress;
pub mod rate;
pub mod report;
pub mod run;
pub mod sequence;

use std::path::PathBuf;

use vostok_client::ClientError;
use vostok_remoting::protocol::response_code;

/// Why a benchmark run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("invalid arguments: {0}")]
    Args(String),
    #[error("{what} failed: {source}")]
    Client {
        what: &'static str,
        #[source]
        source: ClientError,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A short, stable name for an error, to count errors by kind: the response code for
/// broker answers, the variant otherwise (no addresses, so equal errors add up).
pub fn error_kind(e: &ClientError) -> String {
    match e {
        ClientError::Broker { code, .. } => {
            format!("broker {code} {}", response_code::name(*code))
        }
        ClientError::Remoting { source, .. } => {
            let debug = format!("{source:?}");
            let variant = debug
                .split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap_or("unknown");
            format!("remoting {variant}")
        }
        ClientError::Timeout { .. } => "timeout".into(),
        other => {
            let debug = format!("{other:?}");
            debug
                .split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap_or("unknown")
                .to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_drop_addresses() {
        let busy = ClientError::Broker {
            code: response_code::SYSTEM_BUSY,
            remark: "too many requests".into(),
            addr: "10.0.0.1:10911".into(),
        };
        assert_eq!(error_kind(&busy), "broker 2 SYSTEM_BUSY");
        let timeout = ClientError::Timeout {
            operation: "send",
            elapsed: std::time::Duration::from_secs(3),
        };
        assert_eq!(error_kind(&timeout), "timeout");
        let closed = ClientError::Remoting {
            addr: "127.0.0.1:10911".into(),
            source: vostok_remoting::RemotingError::ConnectionClosed {
                peer: "127.0.0.1:10911".parse().unwrap(),
            },
        };
        assert_eq!(error_kind(&closed), "remoting ConnectionClosed");
        assert_eq!(
            error_kind(&ClientError::NoRoute { topic: "T".into() }),
            "NoRoute"
        );
    }
}
