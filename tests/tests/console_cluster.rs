//! The console for the whole cluster (docs/operations.md#one-console-for-the-cluster):
//! the cluster page lists every broker of every cluster the name server knows, with its
//! role and disk use; the topics, groups, clients and message pages of one broker show
//! the other broker groups' rows with their broker, linked to that broker's console; a
//! broker that stopped answering (SIGSTOP) or was killed is a row "unreachable", the
//! page answering all the same; with ACL on, another broker answers as the signed-in
//! account. Real `mqnamesrv` and two `mqbroker` processes; pages are read over HTTP.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use vostok_client::{AdminClient, SessionCredentials};
use vostok_remoting::protocol::body::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};
use vostok_tests::acl::home;
use vostok_tests::client::TestClient;
use vostok_tests::freeze::{freeze, thaw};
use vostok_tests::{http, Broker, BrokerOptions, Namesrv};

/// The row of the members table that names `addr`.
fn row<'a>(page: &'a str, addr: &str) -> Option<&'a str> {
    let table = page.split("<table id=\"members\">").nth(1)?;
    let table = table.split("</table>").next()?;
    table.split("<tr>").find(|r| r.contains(addr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_page_lists_every_broker() {
    let ns = Namesrv::start();
    let options = |name: &str, cluster: &str| BrokerOptions {
        namesrv: Some(ns.addr.clone()),
        broker_name: name.to_owned(),
        cluster: cluster.to_owned(),
        ..Default::default()
    };
    let a = Broker::start(options("console-a", "DefaultCluster").set("consoleEnable", true));
    let b = Broker::start(options("console-b", "OtherCluster"));
    let console = a.console_addr.clone().expect("console address printed");

    // The name server learns both registrations within a moment: ask until it has.
    let deadline = Instant::now() + Duration::from_secs(30);
    let page = loop {
        let answer = http::get(&console, "/").await;
        let listed = answer.status == 200
            && row(&answer.body, &a.addr).is_some_and(|r| r.contains("this broker"))
            && row(&answer.body, &b.addr).is_some_and(|r| r.contains("reachable"));
        if listed {
            break answer.body;
        }
        assert!(
            Instant::now() < deadline,
            "both brokers not listed in time:\n{}",
            answer.body
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let b_row = row(&page, &b.addr).expect("console-b row");
    for cell in ["OtherCluster", "console-b", "ASYNC_MASTER", " %"] {
        assert!(b_row.contains(cell), "{cell:?} missing in {b_row}");
    }
    let a_row = row(&page, &a.addr).expect("console-a row");
    assert!(a_row.contains("DefaultCluster"), "{a_row}");

    // console-b hangs (SIGSTOP: its connections stay open, so the name server keeps
    // listing it); the page still answers, saying it cannot be reached.
    freeze(b.process.pid());
    let answer = http::get(&console, "/").await;
    assert_eq!(answer.status, 200);
    let b_row = row(&answer.body, &b.addr).expect("console-b still listed");
    assert!(b_row.contains("unreachable"), "{b_row}");
    assert!(
        row(&answer.body, &a.addr).is_some_and(|r| r.contains("this broker")),
        "{}",
        answer.body
    );
    thaw(b.process.pid());
}

/// The row of table `id` that holds every one of `cells`.
fn table_row<'a>(page: &'a str, id: &str, cells: &[&str]) -> Option<&'a str> {
    let table = page.split(&format!("<table id=\"{id}\">")).nth(1)?;
    let table = table.split("</table>").next()?;
    table
        .split("<tr>")
        .find(|r| cells.iter().all(|c| r.contains(c)))
}

/// A port free now, for a console whose address the other broker must learn.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// `path` of `console` (with `cookie`), asked until `ready` holds of its body (30 s).
async fn page_until(
    console: &str,
    path: &str,
    cookie: Option<&str>,
    ready: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let headers: Vec<(&str, &str)> = cookie.map(|c| ("cookie", c)).into_iter().collect();
        let answer = http::request(console, "GET", path, &headers, "").await;
        if answer.status == 200 && ready(&answer.body) {
            return answer.body;
        }
        assert!(
            Instant::now() < deadline,
            "{path} not as expected in time ({}):\n{}",
            answer.status,
            answer.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Two broker groups: A's console shows B's topics, groups, consumers and messages,
/// each row naming console-b and its address and linking to B's console; then B
/// stops answering, then is killed, and A's pages still answer, B's row saying it is
/// unreachable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_console_shows_every_broker_group() {
    let ns = Namesrv::start();
    let options = |name: &str| BrokerOptions {
        namesrv: Some(ns.addr.clone()),
        broker_name: name.to_owned(),
        ..Default::default()
    };
    let b_console_port = free_port();
    let a = Broker::start(
        options("console-a")
            .set("consoleEnable", true)
            .set("consoleAdminEnable", true),
    );
    let mut b = Broker::start(
        options("console-b")
            .set("consoleEnable", true)
            .set("consolePort", b_console_port),
    );
    let console = a.console_addr.clone().expect("console address printed");
    let b_console = format!("http://127.0.0.1:{b_console_port}");
    let c = TestClient::default();
    for (addr, topic) in [(&a.addr, "TopicOnA"), (&b.addr, "TopicOnB")] {
        assert_eq!(c.create_topic(addr, topic, 2).await.code, 0);
    }
    for i in 0..3 {
        let props = TestClient::properties(Some("t"), Some(&format!("b-key-{i}")));
        c.send(&b.addr, "TopicOnB", 0, format!("body {i}"), props)
            .await;
    }
    c.wait_dispatched(&b.addr).await;
    // A consumer of GroupOnB online on B, which has consumed one of the three.
    let r = c
        .heartbeat_consumer(&b.addr, "GroupOnB", "TopicOnB", "*")
        .await;
    assert_eq!(r.code, 0, "{}", r.remark());
    c.update_offset(&b.addr, "GroupOnB", "TopicOnB", 0, 1).await;

    let b_cell = format!("console-b</a> ({})", b.addr);
    let topics = page_until(&console, "/topics", None, |p| {
        table_row(p, "topics", &["TopicOnB", &b_cell]).is_some()
    })
    .await;
    let row = table_row(&topics, "topics", &["TopicOnB"]).expect("B's topic");
    assert!(
        row.contains(&format!("{b_console}/topic?name=TopicOnB")),
        "{row}"
    );
    assert!(
        row.contains("<td class=\"n\">3</td>"),
        "messages kept: {row}"
    );
    assert!(
        row.contains(&format!("{b_console}/topics")),
        "action: {row}"
    );
    assert!(
        !row.contains("<form"),
        "no action performed remotely: {row}"
    );
    let own = table_row(&topics, "topics", &["TopicOnA"]).expect("A's topic");
    assert!(own.contains(&format!("console-a ({})", a.addr)), "{own}");
    assert!(own.contains("/topics/delete"), "{own}");
    assert!(
        table_row(&topics, "topics", &["TopicOnA", "console-b"]).is_none(),
        "{topics}"
    );
    // The namespace filter holds across brokers.
    let filtered = http::get(&console, "/topics?namespace=Elsewhere")
        .await
        .body;
    assert!(!filtered.contains("TopicOnB"), "{filtered}");

    let groups = page_until(&console, "/groups", None, |p| {
        table_row(p, "groups", &["GroupOnB", &b_cell]).is_some()
    })
    .await;
    let row = table_row(&groups, "groups", &["GroupOnB"]).expect("B's group");
    assert!(row.contains("<td class=\"n\">2</td>"), "lag 2: {row}");
    assert!(
        row.contains(&format!("{b_console}/group?name=GroupOnB")),
        "{row}"
    );

    let clients = http::get(&console, "/clients").await.body;
    let row = table_row(&clients, "connected", &["GroupOnB", &b_cell]).expect("B's consumer");
    assert!(row.contains("test-client"), "{row}");

    let found = http::get(&console, "/messages?topic=TopicOnB&key=b-key-1")
        .await
        .body;
    let row = table_row(&found, "other-messages", &["b-key-1", &b_cell]).expect("found on B");
    assert!(
        row.contains(&format!("{b_console}/messages?topic=TopicOnB")),
        "{row}"
    );
    // By its offset message id, which names B's address.
    let props = TestClient::properties(None, Some("by-id"));
    let sent = c.send(&b.addr, "TopicOnB", 1, "by id", props).await;
    c.wait_dispatched(&b.addr).await;
    let path = format!("/messages?topic=TopicOnB&id={}", sent.msg_id);
    let found = http::get(&console, &path).await.body;
    let row = table_row(&found, "other-messages", &[&sent.msg_id, &b_cell]).expect("found on B");
    assert!(row.contains("by-id"), "{row}");

    // B hangs: every page still answers, B's row says why it has no rows.
    freeze(b.process.pid());
    for (path, table) in [
        ("/topics", "topics"),
        ("/groups", "groups"),
        ("/clients", "connected"),
    ] {
        let answer = http::get(&console, path).await;
        assert_eq!(answer.status, 200, "{path}");
        let row = table_row(&answer.body, table, &["unreachable", "console-b"])
            .unwrap_or_else(|| panic!("{path}: no unreachable row:\n{}", answer.body));
        assert!(!row.contains("TopicOnB"), "{row}");
        if table == "topics" {
            assert!(
                table_row(&answer.body, table, &["TopicOnA"]).is_some(),
                "{}",
                answer.body
            );
        }
    }
    // B answers again: the next pages show its rows again.
    thaw(b.process.pid());
    page_until(&console, "/topics", None, |p| {
        table_row(p, "topics", &["TopicOnB", &b_cell]).is_some()
    })
    .await;

    // B is killed. The name server forgets a broker whose connection to it closes; it
    // keeps listing one whose machine vanished without closing it, until its
    // registration expires: B's address is registered again here, as that broker would
    // still be listed. A's pages answer, B's row saying the connection was refused.
    b.kill9();
    page_until(&console, "/topics", None, |p| !p.contains("console-b")).await;
    let r = c.register_broker(&ns.addr, "console-b", &b.addr).await;
    assert_eq!(r.code, 0, "{}", r.remark());
    for (path, table) in [
        ("/topics", "topics"),
        ("/groups", "groups"),
        ("/clients", "connected"),
        ("/messages?topic=TopicOnB&key=b-key-1", "other-messages"),
    ] {
        let page = page_until(&console, path, None, |p| {
            table_row(
                p,
                table,
                &["unreachable", &format!("console-b ({})", b.addr)],
            )
            .is_some()
        })
        .await;
        let row = table_row(&page, table, &["unreachable", "console-b"]).expect("B's row");
        assert!(
            !row.contains("TopicOnB") && !row.contains("GroupOnB"),
            "{row}"
        );
    }
}

const ACL: &str = r#"
accounts:
  - accessKey: cluster-admin
    secretKey: admin-secret-1
    admin: true
  - accessKey: topic-reader
    secretKey: reader-secret-1
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - VisibleTopic=SUB
"#;

const FORM: (&str, &str) = ("content-type", "application/x-www-form-urlencoded");

/// Signs in to `console`; the session cookie (`name=token`).
async fn sign_in(console: &str, access_key: &str, secret: &str) -> String {
    let page = http::get(console, "/login").await.body;
    let at = page.find("name=\"csrf\" value=\"").expect("a form token") + 19;
    let token = page[at..].split('"').next().unwrap_or_default();
    let answer = http::request(
        console,
        "POST",
        "/login",
        &[FORM],
        &format!("csrf={token}&accessKey={access_key}&secretKey={secret}&next=%2Ftopics"),
    )
    .await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let cookie = answer.header("set-cookie").expect("a session cookie");
    cookie.split(';').next().unwrap_or_default().to_owned()
}

/// With ACL on, A asks B as the signed-in account: an admin sees B's topics; an account
/// that may only read VisibleTopic sees that one of B's topics and no other (B refuses
/// it the listings; its topic is asked of B by name), and B's refusal on the groups
/// page. No secret is ever in a page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_brokers_answer_as_the_signed_in_account() {
    let ns = Namesrv::start();
    let acl_home = home(ACL);
    let options = |name: &str| {
        BrokerOptions {
            namesrv: Some(ns.addr.clone()),
            broker_name: name.to_owned(),
            env: vec![(
                "ROCKETMQ_HOME".into(),
                acl_home.path().display().to_string(),
            )],
            ..Default::default()
        }
        .set("aclEnable", true)
        .set("consoleEnable", true)
    };
    let a = Broker::start(options("acl-a"));
    let b = Broker::start(options("acl-b"));
    let console = a.console_addr.clone().expect("console address printed");
    let admin = vostok_tests::acl::signed_client("cluster-admin", "admin-secret-1");
    for topic in ["VisibleTopic", "HiddenTopic"] {
        let header = vostok_tests::acl::request(
            vostok_remoting::protocol::request_code::UPDATE_AND_CREATE_TOPIC,
            &[
                ("topic", topic),
                ("defaultTopic", "TBW102"),
                ("readQueueNums", "1"),
                ("writeQueueNums", "1"),
                ("perm", "6"),
                ("topicFilterType", "SINGLE_TAG"),
            ],
        );
        let r = vostok_tests::acl::call(&admin, &b.addr, header).await;
        assert_eq!(r.code, 0, "{}", r.remark());
    }

    let cookie = sign_in(&console, "cluster-admin", "admin-secret-1").await;
    let b_cell = format!("acl-b ({})", b.addr);
    let seen = page_until(&console, "/topics", Some(&cookie), |p| {
        table_row(p, "topics", &["HiddenTopic", &b_cell]).is_some()
    })
    .await;
    assert!(
        table_row(&seen, "topics", &["VisibleTopic", &b_cell]).is_some(),
        "{seen}"
    );
    assert!(!seen.contains("admin-secret-1"), "{seen}");

    // The reader may not list B's topics; it is shown the one it may read, asked of B
    // by name, and nothing else of B.
    let cookie = sign_in(&console, "topic-reader", "reader-secret-1").await;
    let seen = page_until(&console, "/topics", Some(&cookie), |p| {
        table_row(p, "topics", &["VisibleTopic", &b_cell]).is_some()
    })
    .await;
    assert!(!seen.contains("HiddenTopic"), "{seen}");
    assert!(!seen.contains("reader-secret-1"), "{seen}");
    assert!(
        table_row(&seen, "topics", &["refused", &b_cell]).is_none(),
        "{seen}"
    );
    // Its groups page: B refuses it the listing, and says so on B's row.
    let seen = page_until(&console, "/groups", Some(&cookie), |p| {
        table_row(p, "groups", &["refused", &b_cell]).is_some()
    })
    .await;
    let row = table_row(&seen, "groups", &["refused", &b_cell]).expect("B's refusal");
    assert!(row.contains("topic-reader"), "{row}");
}

const ROOT: (&str, &str) = ("root-user", "root-password");

/// Account `name` (password `name-password`) on `broker`, allowed `entries`
/// (`Namespace:ns1`, `Topic:*`, ...) with their actions.
async fn account(admin: &AdminClient, broker: &str, name: &str, entries: &[(&str, &[&str])]) {
    let user = UserInfo {
        username: Some(name.into()),
        password: Some(format!("{name}-password")),
        user_type: Some("Normal".into()),
        user_status: None,
    };
    admin.create_user(broker, &user).await.expect("a user");
    let entries = entries
        .iter()
        .map(|(resource, actions)| PolicyEntryInfo {
            resource: (*resource).into(),
            actions: actions.iter().map(|a| a.to_string()).collect(),
            source_ips: vec![],
            decision: "Allow".into(),
        })
        .collect();
    let acl = AclInfo {
        subject: Some(format!("User:{name}")),
        policies: vec![PolicyInfo {
            policy_type: None,
            entries,
        }],
    };
    let subject = format!("User:{name}");
    admin
        .create_acl(broker, &subject, &acl)
        .await
        .expect("an ACL");
}

/// Two broker groups with ACL 2.0. Alice is confined to namespace ns1 on both; carol
/// may read every topic on A and has no account on B. Each sees of B only what B
/// allows it: the super user B's topics of both namespaces; alice not B's listing
/// (listing is for admins) but her namespace's topic and message on B; carol nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_broker_shows_each_account_only_what_it_allows() {
    let ns = Namesrv::start();
    let options = |name: &str| {
        BrokerOptions {
            namesrv: Some(ns.addr.clone()),
            broker_name: name.to_owned(),
            ..Default::default()
        }
        .set("authenticationEnabled", true)
        .set("authorizationEnabled", true)
        .set(
            "initAuthenticationUser",
            format!(r#"{{"username":"{}","password":"{}"}}"#, ROOT.0, ROOT.1),
        )
        .set("consoleEnable", true)
    };
    let a = Broker::start(options("acl2-a"));
    let b = Broker::start(options("acl2-b"));
    let console = a.console_addr.clone().expect("console address printed");
    let admin = AdminClient::new(&vostok_client::ClientConfig {
        credentials: Some(SessionCredentials::new(ROOT.0, ROOT.1)),
        ..vostok_tests::sdk::client(&ns.addr, "acl2-admin")
    })
    .expect("an admin client");
    let ns1: &[&str] = &["Pub", "Sub"];
    for broker in [&a.addr, &b.addr] {
        account(&admin, broker, "alice", &[("Namespace:ns1", ns1)]).await;
    }
    let sub: &[&str] = &["Sub"];
    account(
        &admin,
        &a.addr,
        "carol",
        &[("Topic:*", sub), ("Group:*", sub)],
    )
    .await;
    let root = TestClient {
        remoting: vostok_tests::acl::signed_client(ROOT.0, ROOT.1),
        client_id: "127.0.0.1@root".into(),
    };
    for topic in ["ns1%orders", "ns2%orders"] {
        let r = root.create_topic(&b.addr, topic, 1).await;
        assert_eq!(r.code, 0, "{}", r.remark());
        let props = TestClient::properties(None, Some(&format!("key-{topic}")));
        root.send(&b.addr, topic, 0, "kept on B", props).await;
    }
    root.wait_dispatched(&b.addr).await;
    let b_cell = format!("acl2-b ({})", b.addr);
    let session = |name: &str| {
        let console = console.clone();
        let (name, password) = match name {
            "root" => (ROOT.0.to_owned(), ROOT.1.to_owned()),
            name => (name.to_owned(), format!("{name}-password")),
        };
        async move { sign_in(&console, &name, &password).await }
    };
    let search = |topic: &str| {
        let topic = topic.replace('%', "%25");
        format!("/messages?topic={topic}&key=key-{topic}")
    };

    // The super user: both namespaces' topics of B.
    let cookie = session("root").await;
    let seen = page_until(&console, "/topics", Some(&cookie), |p| {
        table_row(p, "topics", &["ns2%orders", &b_cell]).is_some()
    })
    .await;
    assert!(
        table_row(&seen, "topics", &["ns1%orders", &b_cell]).is_some(),
        "{seen}"
    );

    // Alice: B refuses her its listing but answers about her namespace's topic; nothing
    // of ns2 shows; B finds her message.
    let cookie = session("alice").await;
    let seen = page_until(&console, "/topics", Some(&cookie), |p| {
        table_row(p, "topics", &["ns1%orders", &b_cell]).is_some()
    })
    .await;
    assert!(!seen.contains("ns2%orders"), "{seen}");
    let found = page_until(&console, &search("ns1%orders"), Some(&cookie), |p| {
        table_row(p, "other-messages", &["key-ns1%orders", &b_cell]).is_some()
    })
    .await;
    assert!(!found.contains("alice-password"), "{found}");
    let refused = http::request(
        &console,
        "GET",
        &search("ns2%orders"),
        &[("cookie", &cookie)],
        "",
    )
    .await;
    assert_eq!(refused.status, 403, "A refuses her ns2 as B would");

    // Carol: A lets her search ns2; B, where she has no account, refuses her.
    let cookie = session("carol").await;
    let page = page_until(&console, &search("ns2%orders"), Some(&cookie), |p| {
        table_row(p, "other-messages", &["peer-error", &b_cell]).is_some()
    })
    .await;
    assert!(
        table_row(&page, "other-messages", &["key-ns2%orders"]).is_none(),
        "{page}"
    );
    admin.shutdown().await;
}
