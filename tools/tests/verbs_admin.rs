//! The configuration and group verbs against a real broker with its embedded name
//! server: `updateSubGroup`/`deleteSubGroup`, `producerConnection`, `getBrokerConfig`,
//! `getNamesrvConfig`, `updateKvConfig`/`deleteKvConfig`, `wipeWritePerm`/
//! `addWritePerm`, each in text and with `--json`.

mod common;

use std::time::Duration;

use common::{eventually, fails, json, mqadmin, ok, start_broker};
use vostok_client::{Message, Producer, ProducerConfig};
use vostok_remoting::protocol::request_code;
use vostok_remoting::{ClientConfig, RemotingClient, RemotingCommand};

/// A broker request from the test itself, answered SUCCESS.
async fn ask(addr: &str, request: RemotingCommand) -> RemotingCommand {
    let response = RemotingClient::new(ClientConfig::default(), None)
        .invoke_sync(addr, request, Duration::from_secs(5))
        .await
        .expect("answered");
    assert_eq!(response.code, 0, "{:?}", response.remark());
    response
}

/// The broker's subscription group table as JSON.
async fn sub_groups(addr: &str) -> serde_json::Value {
    let r = ask(
        addr,
        RemotingCommand::request(request_code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
    )
    .await;
    serde_json::from_slice(&r.body).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_and_config_verbs() {
    let (broker, _dir) = start_broker("verbs-a", |_| {}).await;
    let ns_owned = broker.namesrv_addr();
    let ns = ns_owned.as_str();
    let addr = broker.addr().to_string();

    // updateSubGroup on the cluster: the broker keeps the settings given.
    let text = ok(
        ns,
        &[
            "updateSubGroup",
            "-c",
            "DefaultCluster",
            "-g",
            "VerbGroup",
            "-r",
            "3",
            "-o",
            "true",
        ],
    )
    .await;
    assert!(
        text.contains(&format!("create subscription group to {addr} success.")),
        "{text}"
    );
    assert!(
        text.contains("SubscriptionGroupConfig [groupName=VerbGroup, consumeEnable=true"),
        "{text}"
    );
    let table = sub_groups(&addr).await;
    let group = &table["subscriptionGroupTable"]["VerbGroup"];
    assert_eq!(group["retryMaxTimes"], 3, "{table}");
    assert_eq!(group["consumeMessageOrderly"], true, "{table}");
    assert_eq!(group["consumeBroadcastEnable"], false, "{table}");
    let v = json(
        ns,
        &["updateSubGroup", "-b", &addr, "-g", "VerbGroup", "-r", "5"],
    )
    .await;
    assert_eq!(v["brokers"][0], addr.as_str());
    assert_eq!(v["config"]["retryMaxTimes"], 5);
    assert_eq!(
        sub_groups(&addr).await["subscriptionGroupTable"]["VerbGroup"]["retryMaxTimes"],
        5
    );
    assert!(
        !mqadmin(ns, &["updateSubGroup", "-g", "VerbGroup"])
            .await
            .status
            .success(),
        "-b or -c is required"
    );

    // deleteSubGroup: gone from the table.
    let text = ok(ns, &["deleteSubGroup", "-b", &addr, "-g", "VerbGroup"]).await;
    assert_eq!(
        text,
        format!("delete subscription group [VerbGroup] from broker [{addr}] success.\n")
    );
    assert!(sub_groups(&addr).await["subscriptionGroupTable"]["VerbGroup"].is_null());
    let v = json(
        ns,
        &["deleteSubGroup", "-c", "DefaultCluster", "-g", "Other"],
    )
    .await;
    assert_eq!(v[0], addr.as_str());

    // producerConnection: a started producer is listed with its client id.
    let producer = Producer::new(ProducerConfig::new("VerbPG", ns));
    producer.start().await.unwrap();
    producer
        .send(Message::new("VerbTopic", "x"))
        .await
        .expect("sent");
    let client_id = producer.instance().unwrap().client_id().to_owned();
    let text = eventually("producer listed", || async {
        let out = mqadmin(
            ns,
            &["producerConnection", "-g", "VerbPG", "-t", "VerbTopic"],
        )
        .await;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.contains(&client_id).then_some(text)
    })
    .await;
    let cells: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(cells[0], "0001", "{text}");
    assert_eq!(cells[1], client_id, "{text}");
    assert_eq!(cells[3], "RUST", "{text}");
    let v = json(
        ns,
        &["producerConnection", "-g", "VerbPG", "-t", "VerbTopic"],
    )
    .await;
    assert_eq!(v[0]["clientId"], client_id.as_str());
    producer.shutdown().await;
    fails(
        ns,
        &["producerConnection", "-g", "NobodyPG", "-t", "VerbTopic"],
    )
    .await;

    // getBrokerConfig: RocketMQ's layout, and the keys as JSON.
    let text = ok(ns, &["getBrokerConfig", "-b", &addr]).await;
    assert!(
        text.starts_with(&format!("============{addr}============\n")),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("brokerName "))
        .expect("brokerName line");
    assert_eq!(line, format!("{:<50}=  verbs-a", "brokerName"));
    let v = json(ns, &["getBrokerConfig", "-c", "DefaultCluster"]).await;
    assert_eq!(v[addr.as_str()]["brokerClusterName"], "DefaultCluster");
    let text = ok(ns, &["getBrokerConfig", "-c", "DefaultCluster"]).await;
    assert!(
        text.starts_with(&format!("============Master: {addr}============")),
        "{text}"
    );

    // getNamesrvConfig: one block per name server.
    let text = ok(ns, &["getNamesrvConfig"]).await;
    assert!(
        text.starts_with(&format!("============{ns}============\n")),
        "{text}"
    );
    assert!(text.contains("listenPort"), "{text}");
    let v = json(ns, &["getNamesrvConfig"]).await;
    assert!(v[ns].is_object(), "{v}");

    // updateKvConfig / deleteKvConfig: the name server's KV table changes.
    let text = ok(
        ns,
        &["updateKvConfig", "-s", "VerbNS", "-k", "k1", "-v", "v1"],
    )
    .await;
    assert_eq!(text, "create or update kv config to namespace success.\n");
    let kv = |key: &'static str| {
        let ns = ns.to_owned();
        async move {
            let mut r = RemotingCommand::request(request_code::GET_KV_CONFIG);
            r.ext_fields.insert("namespace", "VerbNS");
            r.ext_fields.insert("key", key);
            let answer = RemotingClient::new(ClientConfig::default(), None)
                .invoke_sync(&ns, r, Duration::from_secs(5))
                .await
                .unwrap();
            answer.ext_fields.get("value").map(str::to_owned)
        }
    };
    assert_eq!(kv("k1").await.as_deref(), Some("v1"));
    let v = json(ns, &["deleteKvConfig", "-s", "VerbNS", "-k", "k1"]).await;
    assert_eq!(v[0], ns);
    assert_eq!(kv("k1").await, None);

    // wipeWritePerm / addWritePerm: the route's write permission goes and comes back.
    let perm = || async {
        let out = mqadmin(ns, &["topicRoute", "-t", "VerbTopic"]).await;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        v["queueDatas"][0]["perm"].as_i64()
    };
    assert_eq!(perm().await, Some(6));
    let text = ok(ns, &["wipeWritePerm", "-b", "verbs-a"]).await;
    assert!(
        text.starts_with(&format!(
            "wipe write perm of broker[verbs-a] in name server[{ns}] OK, "
        )),
        "{text}"
    );
    assert_eq!(perm().await, Some(4));
    let v = json(ns, &["addWritePerm", "-b", "verbs-a"]).await;
    assert_eq!(v[0]["ok"], true);
    assert!(v[0]["topicCount"].as_i64().unwrap() > 0, "{v}");
    assert_eq!(perm().await, Some(6));

    broker.shutdown().await;
}
