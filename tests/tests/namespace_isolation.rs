//! Namespaces that isolate (docs/security.md#namespaces), against a real broker and
//! name server: two ACL 2.0 users, each confined to its own namespace by a
//! `Namespace:` entry, and each also holding a broad `Topic:*`/`Group:*` grant that
//! the confinement overrides. Each works in its own namespace and can neither use nor
//! see the other's through remoting requests, console pages or /metrics.

use vostok_client::{AdminClient, SessionCredentials};
use vostok_remoting::protocol::body::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};
use vostok_remoting::protocol::{request_code as code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::acl::{call, request, send_v2, signed_client};
use vostok_tests::client::TestClient;
use vostok_tests::sdk::client;
use vostok_tests::{http, Broker, BrokerOptions, Namesrv};

const SUPER: (&str, &str) = ("root-user", "root-password");

fn entry(resource: &str, actions: &[&str]) -> PolicyEntryInfo {
    PolicyEntryInfo {
        resource: resource.into(),
        actions: actions.iter().map(|a| a.to_string()).collect(),
        source_ips: vec![],
        decision: "Allow".into(),
    }
}

/// A user confined to `ns`, who also holds Pub and Sub on every topic and group.
async fn confined_user(admin: &AdminClient, broker: &str, name: &str, ns: &str) {
    let user = UserInfo {
        username: Some(name.into()),
        password: Some(format!("{name}-password")),
        user_type: Some("Normal".into()),
        user_status: None,
    };
    admin.create_user(broker, &user).await.unwrap();
    let acl = AclInfo {
        subject: Some(format!("User:{name}")),
        policies: vec![PolicyInfo {
            policy_type: None,
            entries: vec![
                entry(&format!("Namespace:{ns}"), &["Pub", "Sub"]),
                entry("Topic:*", &["Pub", "Sub"]),
                entry("Group:*", &["Sub"]),
            ],
        }],
    };
    admin
        .create_acl(broker, &format!("User:{name}"), &acl)
        .await
        .unwrap();
}

fn as_user(name: &str) -> TestClient {
    TestClient {
        remoting: signed_client(name, &format!("{name}-password")),
        client_id: format!("127.0.0.1@{name}"),
    }
}

fn form_token(page: &str) -> String {
    let marker = "name=\"csrf\" value=\"";
    let at = page.find(marker).expect("a form with its token") + marker.len();
    page[at..].split('"').next().unwrap_or_default().to_owned()
}

/// Signs `name` in to the console; the session cookie.
async fn console_session(console: &str, name: &str) -> String {
    console_session_with(console, name, &format!("{name}-password")).await
}

async fn console_session_with(console: &str, name: &str, password: &str) -> String {
    let token = form_token(&http::get(console, "/login").await.body);
    let answer = http::request(
        console,
        "POST",
        "/login",
        &[("content-type", "application/x-www-form-urlencoded")],
        &format!("csrf={token}&accessKey={name}&secretKey={password}&next=%2Ftopics"),
    )
    .await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let cookie = answer.header("set-cookie").expect("a session cookie");
    cookie.split(';').next().unwrap_or_default().to_owned()
}

/// A broker with ACL 2.0 and /metrics on, topics `ns1%orders` and `ns2%orders`, users
/// alice (confined to ns1) and bob (ns2), each having sent one message to its topic
/// and pulled it with its group.
async fn two_namespaces() -> (Broker, AdminClient, TestClient) {
    two_namespaces_with(BrokerOptions::default()).await
}

async fn two_namespaces_with(options: BrokerOptions) -> (Broker, AdminClient, TestClient) {
    let broker = Broker::start(
        options
            .set("authenticationEnabled", true)
            .set("authorizationEnabled", true)
            .set(
                "initAuthenticationUser",
                format!(r#"{{"username":"{}","password":"{}"}}"#, SUPER.0, SUPER.1),
            )
            .set("metricsExporterType", "PROM")
            .set("metricsPromExporterPort", 0),
    );
    let addr = broker.addr.clone();
    let admin = AdminClient::new(&vostok_client::ClientConfig {
        credentials: Some(SessionCredentials::new(SUPER.0, SUPER.1)),
        ..client(&broker.namesrv, "ns-admin")
    })
    .unwrap();
    let root = TestClient {
        remoting: signed_client(SUPER.0, SUPER.1),
        client_id: "127.0.0.1@root".into(),
    };
    for topic in ["ns1%orders", "ns2%orders"] {
        let r = root.create_topic(&addr, topic, 1).await;
        assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    }
    confined_user(&admin, &addr, "alice", "ns1").await;
    confined_user(&admin, &addr, "bob", "ns2").await;

    // Each produces and consumes in its own namespace.
    for (name, ns) in [("alice", "ns1"), ("bob", "ns2")] {
        let user = as_user(name);
        let topic = format!("{ns}%orders");
        let sent = call(&user.remoting, &addr, send_v2(&topic)).await;
        assert_eq!(sent.code, response_code::SUCCESS, "{}", sent.remark());
        let group = format!("{ns}%g");
        let r = user.heartbeat_consumer(&addr, &group, &topic, "*").await;
        assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
        let pulled = user
            .pull(&addr, &group, &topic, 0, 0, 8, Some(T), "*")
            .await;
        assert_eq!(pulled.code, response_code::SUCCESS, "{ns}: {pulled:?}");
        assert_eq!(pulled.messages.len(), 1, "{ns}");
        let r = user.update_offset(&addr, &group, &topic, 0, 1).await;
        assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    }
    (broker, admin, root)
}

/// Alice cannot send to, pull from, subscribe to, look up, create or delete anything of
/// bob's namespace (or outside any namespace) by remoting requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_user_cannot_use_another_namespace_by_remoting() {
    let (broker, admin, _root) = two_namespaces().await;
    let addr = broker.addr.clone();
    let alice = as_user("alice");
    // Alice cannot send to, pull from, subscribe to or look up bob's namespace.
    let r = call(&alice.remoting, &addr, send_v2("ns2%orders")).await;
    assert_eq!(r.code, response_code::NO_PERMISSION, "{}", r.remark());
    assert!(
        r.remark()
            .contains("User:alice is confined to namespace ns1"),
        "{}",
        r.remark()
    );
    for topic in ["orders", "%DLQ%ns2%g", "%RETRY%ns2%g"] {
        let r = call(&alice.remoting, &addr, send_v2(topic)).await;
        assert_eq!(
            r.code,
            response_code::NO_PERMISSION,
            "{topic}: {}",
            r.remark()
        );
    }
    let pulled = alice
        .pull(&addr, "ns2%g", "ns2%orders", 0, 0, 8, None, "*")
        .await;
    assert_eq!(pulled.code, response_code::NO_PERMISSION);
    let pulled = alice
        .pull(&addr, "ns1%g", "ns2%orders", 0, 0, 8, None, "*")
        .await;
    assert_eq!(
        pulled.code,
        response_code::NO_PERMISSION,
        "own group, other topic"
    );
    let r = alice
        .heartbeat_consumer(&addr, "ns2%g", "ns2%orders", "*")
        .await;
    assert_eq!(r.code, response_code::NO_PERMISSION, "{}", r.remark());
    for c in [code::GET_TOPIC_CONFIG, code::GET_MAX_OFFSET] {
        let fields = [("topic", "ns2%orders"), ("queueId", "0")];
        let r = call(&alice.remoting, &addr, request(c, &fields)).await;
        assert_eq!(r.code, response_code::NO_PERMISSION, "{}", code::name(c));
        let fields = [("topic", "ns1%orders"), ("queueId", "0")];
        let r = call(&alice.remoting, &addr, request(c, &fields)).await;
        assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    }
    // Creating and deleting are administration: refused as well.
    for (c, fields) in [
        (
            code::UPDATE_AND_CREATE_TOPIC,
            vec![("topic", "ns2%new"), ("readQueueNums", "1")],
        ),
        (code::DELETE_TOPIC_IN_BROKER, vec![("topic", "ns2%orders")]),
    ] {
        let r = call(&alice.remoting, &addr, request(c, &fields)).await;
        assert_eq!(r.code, response_code::NO_PERMISSION, "{}", code::name(c));
    }

    admin.shutdown().await;
}

/// The answer's body as text, the call having succeeded.
fn listed(answer: &RemotingCommand, what: &str) -> String {
    assert_eq!(
        answer.code,
        response_code::SUCCESS,
        "{what}: {}",
        answer.remark()
    );
    String::from_utf8_lossy(&answer.body).into_owned()
}

/// The name server's lists, asked by alice, name ns1's topic and nothing of ns2; a
/// route of ns2 is refused to her. The SUPER user still sees both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_user_sees_only_its_namespace_at_the_name_server() {
    let (broker, admin, root) = two_namespaces().await;
    let ns = broker.namesrv.clone();
    let all_topics = || request(code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[]);
    // Wait for the broker's registration to carry both topics.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let everything = root.call(&ns, all_topics()).await;
        let text = listed(&everything, "SUPER topic list");
        if text.contains("ns1%orders") && text.contains("ns2%orders") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{text}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let alice = as_user("alice");
    let text = listed(&alice.call(&ns, all_topics()).await, "topic list");
    assert!(text.contains("ns1%orders"), "{text}");
    assert!(!text.contains("ns2%") && !text.contains("TBW102"), "{text}");
    name_server_lists_and_routes(&ns, &root, &alice).await;
    admin.shutdown().await;
}

/// A separate name server following the broker's users (`authConfigPath`) answers
/// alice as the embedded one does, once it has read the users the broker wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_separate_name_server_follows_the_brokers_users() {
    let users = tempfile::tempdir().unwrap();
    let link = users.path().join("auth");
    let namesrv = Namesrv::start_with(&[("authConfigPath", &link.display().to_string())]);
    let options = BrokerOptions {
        namesrv: Some(namesrv.addr.clone()),
        ..BrokerOptions::default()
    };
    let (broker, admin, root) = two_namespaces_with(options).await;
    std::os::unix::fs::symlink(broker.store_dir.join("config").join("auth"), &link).unwrap();
    let ns = namesrv.addr.clone();
    let alice = as_user("alice");
    let all_topics = || request(code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = listed(&alice.call(&ns, all_topics()).await, "topic list");
        if text.contains("ns1%orders") && !text.contains("ns2%") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{text}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    name_server_lists_and_routes(&ns, &root, &alice).await;
    admin.shutdown().await;
}

/// Alice's lists at name server `ns` hold no topic of ns2 and its routes are refused.
async fn name_server_lists_and_routes(ns: &str, root: &TestClient, alice: &TestClient) {
    let ns = ns.to_owned();
    let all_topics = || request(code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[]);

    let info = listed(
        &root
            .call(&ns, request(code::GET_BROKER_CLUSTER_INFO, &[]))
            .await,
        "cluster info",
    );
    let cluster = info
        .split("\"clusterAddrTable\":{\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("a cluster in {info}"))
        .to_owned();
    for c in [
        code::GET_TOPICS_BY_CLUSTER,
        code::GET_SYSTEM_TOPIC_LIST_FROM_NS,
        code::GET_UNIT_TOPIC_LIST,
    ] {
        let answer = alice
            .call(&ns, request(c, &[("cluster", cluster.as_str())]))
            .await;
        let text = listed(&answer, code::name(c));
        assert!(!text.contains("ns2%"), "{}: {text}", code::name(c));
    }
    let by_cluster = root
        .call(
            &ns,
            request(
                code::GET_TOPICS_BY_CLUSTER,
                &[("cluster", cluster.as_str())],
            ),
        )
        .await;
    assert!(listed(&by_cluster, "by cluster").contains("ns2%orders"));

    let route = |topic: &'static str| request(code::GET_ROUTEINFO_BY_TOPIC, &[("topic", topic)]);
    let own = alice.call(&ns, route("ns1%orders")).await;
    assert_eq!(own.code, response_code::SUCCESS, "{}", own.remark());
    let foreign = alice.call(&ns, route("ns2%orders")).await;
    assert_eq!(
        foreign.code,
        response_code::NO_PERMISSION,
        "{}",
        foreign.remark()
    );
    assert!(
        foreign.remark().contains("confined to namespace ns1"),
        "{}",
        foreign.remark()
    );
    // A wrong password is no way around it.
    let impostor = TestClient {
        remoting: signed_client("alice", "wrong"),
        client_id: "127.0.0.1@impostor".into(),
    };
    let refused = impostor.call(&ns, all_topics()).await;
    assert_eq!(
        refused.code,
        response_code::NO_PERMISSION,
        "{}",
        refused.remark()
    );
}

/// Listing requests alice may make at the broker are answered with ns1's rows only;
/// those naming ns2's topics or groups are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_user_lists_only_its_namespace_at_the_broker() {
    let (broker, admin, root) = two_namespaces().await;
    let addr = broker.addr.clone();
    // A group of ns2 that has consumed ns1's topic (a SUPER user's doing).
    let r = root
        .update_offset(&addr, "ns2%spy", "ns1%orders", 0, 1)
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    let alice = as_user("alice");
    let everything = listed(
        &root
            .call(&addr, request(code::GET_ALL_TOPIC_CONFIG, &[]))
            .await,
        "SUPER topic config",
    );
    assert!(everything.contains("ns2%orders"), "{everything}");
    for (c, fields) in [
        (code::GET_ALL_TOPIC_CONFIG, vec![]),
        (code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG, vec![]),
        (code::GET_BROKER_CONSUME_STATS, vec![("isOrder", "false")]),
        (code::GET_CONSUME_STATS, vec![("consumerGroup", "ns1%g")]),
        (
            code::QUERY_TOPIC_CONSUME_BY_WHO,
            vec![("topic", "ns1%orders")],
        ),
        (code::GET_TOPIC_STATS_INFO, vec![("topic", "ns1%orders")]),
    ] {
        let text = listed(&alice.call(&addr, request(c, &fields)).await, code::name(c));
        assert!(!text.contains("ns2%"), "{}: {text}", code::name(c));
        if c != code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG && c != code::GET_TOPIC_STATS_INFO {
            assert!(text.contains("ns1%"), "{}: {text}", code::name(c));
        }
    }
    for (c, fields) in [
        (code::GET_CONSUME_STATS, vec![("consumerGroup", "ns2%g")]),
        (
            code::GET_CONSUMER_CONNECTION_LIST,
            vec![("consumerGroup", "ns2%g")],
        ),
        (
            code::GET_PRODUCER_CONNECTION_LIST,
            vec![("producerGroup", "ns2%p")],
        ),
        (code::GET_TOPIC_STATS_INFO, vec![("topic", "ns2%orders")]),
        (
            code::QUERY_TOPIC_CONSUME_BY_WHO,
            vec![("topic", "ns2%orders")],
        ),
        (code::GET_SUBSCRIPTIONGROUP_CONFIG, vec![("group", "ns2%g")]),
    ] {
        let r = alice.call(&addr, request(c, &fields)).await;
        assert_eq!(
            r.code,
            response_code::NO_PERMISSION,
            "{}: {}",
            code::name(c),
            r.remark()
        );
    }
    // Broker-wide administration stays with SUPER users.
    let r = alice
        .call(&addr, request(code::GET_BROKER_CONFIG, &[]))
        .await;
    assert_eq!(r.code, response_code::NO_PERMISSION, "{}", r.remark());

    admin.shutdown().await;
}

/// Alice's heartbeats may register producer groups of ns1 and the groups clients use on
/// their own, never a producer group of ns2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_user_heartbeats_only_its_namespace_groups() {
    let (broker, admin, _root) = two_namespaces().await;
    let addr = broker.addr.clone();
    let alice = as_user("alice");
    for group in ["ns1%p", "CLIENT_INNER_PRODUCER"] {
        let r = alice.heartbeat_producer(&addr, group).await;
        assert_eq!(r.code, response_code::SUCCESS, "{group}: {}", r.remark());
    }
    for group in ["ns2%p", "p"] {
        let r = alice.heartbeat_producer(&addr, group).await;
        assert_eq!(
            r.code,
            response_code::NO_PERMISSION,
            "{group}: {}",
            r.remark()
        );
        assert!(
            r.remark().contains("confined to namespace ns1"),
            "{}",
            r.remark()
        );
    }
    let r = alice
        .heartbeat_consumer(&addr, "TOOLS_CONSUMER", "ns1%orders", "*")
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    let r = alice
        .heartbeat_consumer(&addr, "TOOLS_CONSUMER", "ns2%orders", "*")
        .await;
    assert_eq!(r.code, response_code::NO_PERMISSION, "{}", r.remark());

    admin.shutdown().await;
}

/// The console and /metrics, signed in as alice, show ns1 and nothing of ns2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_user_sees_only_its_namespace_on_the_console_and_metrics() {
    let (broker, admin, root) = two_namespaces().await;
    // A group of ns2 that has consumed ns1's topic (a SUPER user's doing).
    let r = root
        .update_offset(&broker.addr, "ns2%spy", "ns1%orders", 0, 1)
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    // The console lists only alice's namespace and refuses bob's topic page.
    let console = broker.console_addr.clone().expect("console address");
    let cookie = console_session(&console, "alice").await;
    let get = |path: &'static str| {
        let (console, cookie) = (console.clone(), cookie.clone());
        async move { http::request(&console, "GET", path, &[("cookie", &cookie)], "").await }
    };
    let topics = get("/topics").await;
    assert_eq!(topics.status, 200, "{}", topics.body);
    assert!(topics.body.contains("ns1%orders"), "{}", topics.body);
    assert!(!topics.body.contains("ns2%"), "{}", topics.body);
    let groups = get("/groups").await;
    assert!(!groups.body.contains("ns2%"), "{}", groups.body);
    let page = get("/topic?name=ns2%25orders").await;
    assert_eq!(page.status, 403, "{}", page.body);
    let own = get("/topic?name=ns1%25orders").await;
    assert_eq!(own.status, 200, "{}", own.body);
    assert!(
        own.body.contains("ns1%g") && !own.body.contains("ns2%"),
        "{}",
        own.body
    );

    // A SUPER user's console shows one namespace when asked.
    let root_cookie = console_session_with(&console, SUPER.0, SUPER.1).await;
    let root_get = |path: &'static str| {
        let (console, cookie) = (console.clone(), root_cookie.clone());
        async move { http::request(&console, "GET", path, &[("cookie", &cookie)], "").await }
    };
    let all = root_get("/topics").await;
    assert!(all.body.contains("ns1%orders") && all.body.contains("ns2%orders"));
    let one = root_get("/topics?namespace=ns2").await;
    assert!(one.body.contains("ns2%orders"), "{}", one.body);
    assert!(
        !one.body.contains("ns1%") && !one.body.contains("TBW102"),
        "{}",
        one.body
    );
    let groups = root_get("/groups?namespace=ns1").await;
    assert!(groups.body.contains("ns1%g"), "{}", groups.body);
    assert!(!groups.body.contains("ns2%"), "{}", groups.body);

    // /metrics: a scrape signed in as alice (HTTP Basic) names no ns2 topic or group;
    // one without credentials (no bearer token is set here) names both.
    let metrics = broker.metrics_addr.clone().expect("metrics address");
    let everything = http::get(&metrics, "/metrics").await;
    assert!(
        everything.body.contains("topic=\"ns2%orders\""),
        "{}",
        everything.body
    );
    let alice_basic = ("authorization", "Basic YWxpY2U6YWxpY2UtcGFzc3dvcmQ=");
    let scoped = http::request(&metrics, "GET", "/metrics", &[alice_basic], "").await;
    assert_eq!(scoped.status, 200, "{}", scoped.body);
    assert!(
        scoped.body.contains("topic=\"ns1%orders\""),
        "{}",
        scoped.body
    );
    assert!(!scoped.body.contains("ns2%"), "{}", scoped.body);
    let wrong = ("authorization", "Basic YWxpY2U6d3Jvbmc=");
    let refused = http::request(&metrics, "GET", "/metrics", &[wrong], "").await;
    assert_eq!(refused.status, 401, "{}", refused.body);

    admin.shutdown().await;
}

const T: std::time::Duration = std::time::Duration::from_secs(5);
