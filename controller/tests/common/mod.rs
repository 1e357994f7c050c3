//! What the controller tests share: a quorum's peer ports on loopback.

use tokio::net::TcpListener;

/// `n` listeners on free loopback ports, and their addresses.
pub async fn bind_peers(n: usize) -> (Vec<TcpListener>, Vec<String>) {
    let mut listeners = Vec::new();
    for _ in 0..n {
        listeners.push(TcpListener::bind("127.0.0.1:0").await.unwrap());
    }
    let addrs = listeners
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect();
    (listeners, addrs)
}

/// `controllerDLegerPeers` for `addrs`: `n0-addr;n1-addr;...`.
pub fn peers(addrs: &[String]) -> String {
    addrs
        .iter()
        .enumerate()
        .map(|(n, a)| format!("n{n}-{a}"))
        .collect::<Vec<_>>()
        .join(";")
}
