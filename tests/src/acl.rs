//! What the ACL and TLS scenarios share: an installation directory with a
//! `plain_acl.yml`, clients that sign with an account's keys, raw requests.

use std::sync::Arc;
use std::time::Duration;

use vostok_remoting::auth::{AclClientHook, SessionCredentials};
use vostok_remoting::{RemotingClient, RemotingCommand};

/// Bound of one call.
pub const T: Duration = Duration::from_secs(10);

/// `$ROCKETMQ_HOME` with `conf/plain_acl.yml`.
pub fn home(acl: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(home.path().join("conf")).expect("conf dir");
    std::fs::write(home.path().join("conf/plain_acl.yml"), acl).expect("plain_acl.yml");
    home
}

/// A raw client signing every request with `ak`/`sk`.
pub fn signed_client(ak: &str, sk: &str) -> RemotingClient {
    let c = RemotingClient::new(vostok_remoting::ClientConfig::default(), None);
    c.register_rpc_hook(Arc::new(AclClientHook::new(SessionCredentials::new(
        ak, sk,
    ))));
    c
}

/// A request with these ext fields.
pub fn request(request_code: i32, fields: &[(&str, &str)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(request_code);
    for (k, v) in fields {
        r.ext_fields.insert(k, v);
    }
    r
}

/// The answer to `r`; the call itself must not fail.
pub async fn call(c: &RemotingClient, addr: &str, r: RemotingCommand) -> RemotingCommand {
    c.invoke_sync(addr, r, T).await.expect("the server answers")
}

/// SEND_MESSAGE_V2 of one small message to queue 0 of `topic`.
pub fn send_v2(topic: &str) -> RemotingCommand {
    let header = vostok_remoting::protocol::header::SendMessageRequestHeaderV2 {
        a: "PG".into(),
        b: topic.into(),
        c: "TBW102".into(),
        d: 4,
        e: 0,
        f: 0,
        g: 1,
        h: 0,
        ..Default::default()
    };
    RemotingCommand::request_with_header(
        vostok_remoting::protocol::request_code::SEND_MESSAGE_V2,
        &header,
    )
    .with_body(&b"hello"[..])
}
