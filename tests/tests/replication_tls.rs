//! TLS on the HA port between real broker processes (docs/replication.md#tls): a
//! SYNC_MASTER whose ports are TLS-only acknowledges sends once a slave that connects
//! in TLS (`tls.enable`) holds them, and refuses a plain slave with a warning naming
//! the reason; the plain slave never receives any of the commitlog.

use vostok_remoting::tls::{ClientTls, ClientTlsOptions};
use vostok_remoting::{ClientConfig, RemotingClient};
use vostok_tests::client::TestClient;
use vostok_tests::sdk::{eventually, wait_until};
use vostok_tests::{Broker, BrokerOptions};

fn max_offset(info: &std::collections::BTreeMap<String, String>) -> i64 {
    info.get("commitLogMaxOffset")
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enforcing_master_replicates_to_a_tls_slave_and_refuses_a_plain_one() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = vostok_tests::pki::write_server_pki(dir.path());
    let tls_keys = |o: BrokerOptions| {
        o.set("tls.enable", true)
            .set("tls.client.trustCertPath", ca.display())
    };
    let ha_port = vostok_tests::free_port();
    let master = Broker::start(tls_keys(
        BrokerOptions::default()
            .set("brokerRole", "SYNC_MASTER")
            .set("haListenPort", ha_port)
            .set("tls.server.mode", "enforcing")
            .set("tls.server.certPath", cert.display())
            .set("tls.server.keyPath", key.display()),
    ));
    let tls = ClientTls::new(&ClientTlsOptions {
        trust_cert_path: Some(ca.clone()),
        ..ClientTlsOptions::default()
    })
    .unwrap();
    let secure = TestClient {
        remoting: RemotingClient::new(
            ClientConfig {
                tls: Some(tls),
                ..ClientConfig::default()
            },
            None,
        ),
        client_id: "127.0.0.1@ha-tls-test".into(),
    };
    let plain = TestClient::new("ha-tls-plain");

    // The slave learns the master's HA address from the (TLS-only) name server.
    let slave = Broker::start(tls_keys(
        BrokerOptions {
            namesrv: Some(master.namesrv.clone()),
            ..BrokerOptions::default()
        }
        .set("brokerId", 1)
        .set("brokerRole", "SLAVE"),
    ));
    eventually("the TLS slave to connect", || async {
        secure
            .runtime_info(&master.addr)
            .await
            .get("haConnectionCount")
            .map(String::as_str)
            == Some("1")
    })
    .await;
    secure.create_topic(&master.addr, "HaTls", 4).await;
    for i in 0..40 {
        // SUCCESS from a SYNC_MASTER: the TLS slave acknowledged it.
        secure
            .send(&master.addr, "HaTls", i % 4, format!("m{i}"), String::new())
            .await;
    }
    let end = max_offset(&secure.runtime_info(&master.addr).await);
    eventually("the slave to hold the master's commitlog", || async {
        max_offset(&plain.runtime_info(&slave.addr).await) == end
    })
    .await;
    // A slave without tls.enable, pointed at the HA port directly.
    let plain_slave = Broker::start(
        BrokerOptions {
            namesrv: Some(master.namesrv.clone()),
            ..BrokerOptions::default()
        }
        .set("brokerId", 2)
        .set("brokerRole", "SLAVE")
        .set("haMasterAddress", format!("127.0.0.1:{ha_port}")),
    );
    wait_until("the master's warning", || {
        master.process.log().contains("HA connection refused")
    })
    .await;
    let log = master.process.log();
    let line = log
        .lines()
        .find(|l| l.contains("HA connection refused"))
        .unwrap();
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("enforcing accepts only TLS"), "{line}");
    wait_until("the plain slave's error", || {
        plain_slave.process.log().contains("tls.enable=true")
    })
    .await;
    secure
        .send(&master.addr, "HaTls", 0, "after", String::new())
        .await;
    let info = plain.runtime_info(&plain_slave.addr).await;
    assert_eq!(max_offset(&info), 0, "no commitlog reached the plain slave");
    assert_eq!(
        secure
            .runtime_info(&master.addr)
            .await
            .get("haConnectionCount")
            .map(String::as_str),
        Some("1"),
        "only the TLS slave counts"
    );
}
