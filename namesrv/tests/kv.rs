//! The KV store over the wire and on disk.

mod common;

use common::*;
use vostok_namesrv::{NameServer, NamesrvError};
use vostok_remoting::protocol::body::KvTable;
use vostok_remoting::protocol::header::{
    GetKvConfigResponseHeader, GetKvListByNamespaceRequestHeader, KvConfigRequestHeader,
    PutKvConfigRequestHeader,
};
use vostok_remoting::protocol::{json, request_code, response_code};
use vostok_remoting::{RemotingClient, RemotingCommand};

fn put(namespace: &str, key: &str, value: &str) -> RemotingCommand {
    RemotingCommand::request_with_header(
        request_code::PUT_KV_CONFIG,
        &PutKvConfigRequestHeader {
            namespace: namespace.into(),
            key: key.into(),
            value: value.into(),
        },
    )
}

fn key_request(code: i32, namespace: &str, key: &str) -> RemotingCommand {
    RemotingCommand::request_with_header(
        code,
        &KvConfigRequestHeader {
            namespace: namespace.into(),
            key: key.into(),
        },
    )
}

async fn get(client: &RemotingClient, addr: &str, namespace: &str, key: &str) -> Option<String> {
    let response = call(
        client,
        addr,
        key_request(request_code::GET_KV_CONFIG, namespace, key),
    )
    .await;
    match response.code {
        response_code::SUCCESS => {
            let header: GetKvConfigResponseHeader = response.decode_header().unwrap();
            header.value
        }
        response_code::QUERY_NOT_FOUND => None,
        other => panic!("unexpected response {other}: {}", response.remark()),
    }
}

async fn list(client: &RemotingClient, addr: &str, namespace: &str) -> Option<KvTable> {
    let request = RemotingCommand::request_with_header(
        request_code::GET_KVLIST_BY_NAMESPACE,
        &GetKvListByNamespaceRequestHeader {
            namespace: namespace.into(),
        },
    );
    let response = call(client, addr, request).await;
    (response.code == response_code::SUCCESS)
        .then(|| json::from_slice("KvTable", &response.body).unwrap())
}

#[tokio::test]
async fn put_get_delete_and_list() {
    let ns = TestNamesrv::start().await;
    let client = client();
    assert_eq!(get(&client, &ns.addr, "ns", "k").await, None);
    let missing = call(
        &client,
        &ns.addr,
        key_request(request_code::GET_KV_CONFIG, "ns", "k"),
    )
    .await;
    assert_eq!(missing.remark(), "No config item, Namespace: ns Key: k");

    for (k, v) in [("k", "v1"), ("k", "v2"), ("other", "x y=z")] {
        assert_eq!(
            call(&client, &ns.addr, put("ns", k, v)).await.code,
            response_code::SUCCESS
        );
    }
    assert_eq!(
        get(&client, &ns.addr, "ns", "k").await.as_deref(),
        Some("v2")
    );
    let table = list(&client, &ns.addr, "ns").await.unwrap().table;
    assert_eq!(table.len(), 2);
    assert_eq!(table["other"], "x y=z");

    let delete = key_request(request_code::DELETE_KV_CONFIG, "ns", "k");
    assert_eq!(
        call(&client, &ns.addr, delete.clone()).await.code,
        response_code::SUCCESS
    );
    assert_eq!(
        call(&client, &ns.addr, delete).await.code,
        response_code::SUCCESS,
        "idempotent"
    );
    assert_eq!(get(&client, &ns.addr, "ns", "k").await, None);
    assert!(list(&client, &ns.addr, "nothing").await.is_none());

    // An empty namespace or key is refused.
    let response = call(&client, &ns.addr, put("", "k", "v")).await;
    assert_eq!(response.code, response_code::SYSTEM_ERROR);
    assert!(response.remark().contains("namespace"));
}

#[tokio::test]
async fn the_store_survives_a_restart() {
    let ns = TestNamesrv::start().await;
    let client = client();
    assert_eq!(
        call(&client, &ns.addr, put("ORDER_TOPIC_CONFIG", "T", "a:4;b:4"))
            .await
            .code,
        0
    );
    assert_eq!(
        call(&client, &ns.addr, put("ns", "gone", "soon"))
            .await
            .code,
        0
    );
    assert_eq!(
        call(
            &client,
            &ns.addr,
            key_request(request_code::DELETE_KV_CONFIG, "ns", "gone")
        )
        .await
        .code,
        0
    );
    let TestNamesrv { server, dir, .. } = ns;
    server.shutdown().await;
    drop(server);

    let kv_path = dir.path().join("namesrv").join("kvConfig.json");
    let text = std::fs::read_to_string(&kv_path).unwrap();
    assert!(text.contains("\"configTable\""), "{text}");

    let config = config_in(&dir);
    let again = TestNamesrv::start_in(dir, config).await;
    let client = common::client();
    assert_eq!(
        get(&client, &again.addr, "ORDER_TOPIC_CONFIG", "T")
            .await
            .as_deref(),
        Some("a:4;b:4")
    );
    assert_eq!(get(&client, &again.addr, "ns", "gone").await, None);
    again.server.shutdown().await;
}

#[tokio::test]
async fn a_failed_write_is_reported_and_serving_goes_on() {
    let ns = TestNamesrv::start().await;
    // The store's directory becomes a file after start: every write now fails.
    let namesrv_dir = ns.dir.path().join("namesrv");
    if namesrv_dir.exists() {
        std::fs::remove_dir_all(&namesrv_dir).unwrap();
    }
    std::fs::write(&namesrv_dir, b"in the way").unwrap();
    let client = client();
    let response = call(&client, &ns.addr, put("ns", "k", "v")).await;
    assert_eq!(response.code, response_code::SYSTEM_ERROR);
    assert!(
        response.remark().contains("not persisted"),
        "{}",
        response.remark()
    );
    // The value is served from memory; other requests go on.
    assert_eq!(
        get(&client, &ns.addr, "ns", "k").await.as_deref(),
        Some("v")
    );
    assert!(route(&client, &ns.addr, "T").await.is_err());
    ns.server.shutdown().await;
}

#[tokio::test]
async fn an_unreadable_store_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(&dir);
    std::fs::create_dir_all(config.kv_config_path.parent().unwrap()).unwrap();
    std::fs::write(&config.kv_config_path, b"{\"configTable\":{\"ns\":{\"k\":").unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = NameServer::start(config, listener)
        .await
        .err()
        .expect("refuses to start");
    assert!(matches!(err, NamesrvError::Corrupt { .. }), "{err}");
}
