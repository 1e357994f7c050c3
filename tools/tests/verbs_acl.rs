//! The ACL verbs added to the 2.0 set (`getUser`, `getAcl`, `copyUser`, `copyAcl`,
//! between two brokers running ACL 2.0) and the ACL 1.0 verbs (`updateAclConfig`,
//! `deleteAclConfig`, `updateGlobalWhiteAddr`, `clusterAclConfigVersion`, against a
//! broker reading `plain_acl.yml`), each in text and with `--json`.

mod common;

use common::{fails, json, ok, start_broker};
use vostok_client::{Message, Producer, ProducerConfig};
use vostok_remoting::auth::SessionCredentials;

/// `args` signed as `user`.
fn signed(args: &[&str], user: (&str, &str)) -> Vec<String> {
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend(["--access-key", user.0, "--secret-key", user.1].map(String::from));
    all
}

async fn run(ns: &str, args: Vec<String>) -> String {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(ns, &refs).await
}

async fn run_json(ns: &str, args: Vec<String>) -> serde_json::Value {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    json(ns, &refs).await
}

const ROOT: (&str, &str) = ("root-user", "root-secret");

fn acl_2(config: &mut vostok_broker::BrokerConfig) {
    for (k, v) in [
        ("authenticationEnabled", "true"),
        ("authorizationEnabled", "true"),
        (
            "initAuthenticationUser",
            r#"{"username":"root-user","password":"root-secret"}"#,
        ),
    ] {
        config.apply_property(k, v).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_2_users_and_acls_are_read_and_copied_between_brokers() {
    let (a, _da) = start_broker("acl-copy-a", acl_2).await;
    let (b, _db) = start_broker("acl-copy-b", acl_2).await;
    let ns = a.namesrv_addr();
    let (a_addr, b_addr) = (a.addr().to_string(), b.addr().to_string());
    let ns = ns.as_str();
    run(
        ns,
        signed(
            &[
                "createUser",
                "-b",
                &a_addr,
                "-u",
                "bob",
                "-p",
                "bob-secret",
                "-t",
                "Normal",
            ],
            ROOT,
        ),
    )
    .await;
    run(
        ns,
        signed(
            &[
                "createAcl",
                "-b",
                &a_addr,
                "-s",
                "User:bob",
                "-r",
                "Topic:copied",
                "-a",
                "Pub",
                "-d",
                "Allow",
            ],
            ROOT,
        ),
    )
    .await;

    // getUser shows the user without its password; getAcl its policy entries.
    let text = run(ns, signed(&["getUser", "-b", &a_addr, "-u", "bob"], ROOT)).await;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["#UserName", "#Password", "#UserType", "#UserStatus"]
    );
    let cells: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        (cells[0], cells[1], cells[2]),
        ("bob", "-", "Normal"),
        "{text}"
    );
    let v = run_json(ns, signed(&["getUser", "-b", &a_addr, "-u", "bob"], ROOT)).await;
    assert_eq!(v["username"], "bob");
    assert!(v.get("password").is_none(), "{v}");
    let text = run(
        ns,
        signed(&["getAcl", "-b", &a_addr, "-s", "User:bob"], ROOT),
    )
    .await;
    assert!(text.starts_with("#Subject"), "{text}");
    assert!(
        text.contains("Topic:copied") && text.contains("Allow"),
        "{text}"
    );
    let v = run_json(
        ns,
        signed(&["getAcl", "-b", &a_addr, "-s", "User:bob"], ROOT),
    )
    .await;
    assert_eq!(v[0]["resource"], "Topic:copied", "{v}");
    let refs = signed(&["getUser", "-b", &a_addr, "-u", "nobody"], ROOT);
    let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
    fails(ns, &refs).await;

    // copyUser and copyAcl: bob can publish on the other broker with his password.
    let text = run(
        ns,
        signed(
            &["copyUser", "-f", &a_addr, "-t", &b_addr, "-u", "bob"],
            ROOT,
        ),
    )
    .await;
    assert_eq!(
        text,
        format!("copy user of bob from {a_addr} to {b_addr} success.\n")
    );
    let v = run_json(
        ns,
        signed(
            &["copyAcl", "-f", &a_addr, "-t", &b_addr, "-s", "User:bob"],
            ROOT,
        ),
    )
    .await;
    assert_eq!(v[0]["addr"], b_addr.as_str(), "{v}");
    run(
        ns,
        signed(
            &[
                "updateTopic",
                "-t",
                "copied",
                "-b",
                &b_addr,
                "-r",
                "1",
                "-w",
                "1",
            ],
            ROOT,
        ),
    )
    .await;
    let mut config = ProducerConfig::new("CopiedPG", &b.namesrv_addr());
    config.client.credentials = Some(SessionCredentials::new("bob", "bob-secret"));
    let producer = Producer::new(config);
    producer.start().await.unwrap();
    producer
        .send(Message::new("copied", "from bob"))
        .await
        .expect("bob's copied password and ACL let him publish");
    producer.shutdown().await;
    // Copying everything again updates what the target has.
    let v = run_json(
        ns,
        signed(&["copyUser", "-f", &a_addr, "-t", &b_addr], ROOT),
    )
    .await;
    assert!(
        v.as_array().unwrap().len() >= 2,
        "bob and the root user: {v}"
    );

    // A user that is not SUPER gets no password, so cannot copy users.
    run(
        ns,
        signed(
            &["createUser", "-b", &a_addr, "-u", "eve", "-p", "eve-secret"],
            ROOT,
        ),
    )
    .await;
    let refs = signed(
        &["copyUser", "-f", &a_addr, "-t", &b_addr],
        ("eve", "eve-secret"),
    );
    let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
    fails(ns, &refs).await;
    b.shutdown().await;
    a.shutdown().await;
}

const PLAIN_ACL: &str =
    "accounts:\n  - accessKey: RocketMQAdmin\n    secretKey: admin-secret\n    admin: true\n";
const ADMIN: (&str, &str) = ("RocketMQAdmin", "admin-secret");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_1_accounts_and_white_addresses_change_the_files() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    let file = home.path().join("conf/plain_acl.yml");
    std::fs::write(&file, PLAIN_ACL).unwrap();
    let home_arg = home.path().display().to_string();
    let (broker, _dir) = start_broker("acl-plain", |c| {
        c.apply_property("aclEnable", "true").unwrap();
        c.apply_property("rocketmqHome", &home_arg).unwrap();
    })
    .await;
    let ns_owned = broker.namesrv_addr();
    let ns = ns_owned.as_str();
    let addr = broker.addr().to_string();

    let text = run(
        ns,
        signed(
            &[
                "updateAclConfig",
                "-b",
                &addr,
                "-a",
                "publisher01",
                "-s",
                "publisher-secret",
                "-t",
                "orders=PUB",
                "-m",
                "false",
            ],
            ADMIN,
        ),
    )
    .await;
    assert!(
        text.starts_with(&format!(
            "create or update plain access config to {addr} success.\nPlainAccessConfig{{accessKey='publisher01'"
        )),
        "{text}"
    );
    assert!(
        !text.contains("publisher-secret"),
        "no secret printed: {text}"
    );
    let yaml = std::fs::read_to_string(&file).unwrap();
    assert!(
        yaml.contains("publisher01") && yaml.contains("orders=PUB"),
        "{yaml}"
    );
    // The account is in force at once: it may publish to orders.
    run(
        ns,
        signed(
            &[
                "updateTopic",
                "-t",
                "orders",
                "-b",
                &addr,
                "-r",
                "1",
                "-w",
                "1",
            ],
            ADMIN,
        ),
    )
    .await;
    let mut config = ProducerConfig::new("PlainPG", ns);
    config.client.credentials = Some(SessionCredentials::new("publisher01", "publisher-secret"));
    let producer = Producer::new(config);
    producer.start().await.unwrap();
    producer
        .send(Message::new("orders", "signed"))
        .await
        .expect("the new account publishes");
    producer.shutdown().await;

    let v = run_json(
        ns,
        signed(
            &[
                "updateGlobalWhiteAddr",
                "-b",
                &addr,
                "-g",
                "10.9.9.9,10.8.*",
            ],
            ADMIN,
        ),
    )
    .await;
    assert_eq!(v[0]["addr"], addr.as_str());
    assert!(std::fs::read_to_string(&file).unwrap().contains("10.9.9.9"));
    let refs = signed(
        &[
            "updateGlobalWhiteAddr",
            "-b",
            &addr,
            "-g",
            "10.9.9.9",
            "-p",
            "/etc/hosts",
        ],
        ADMIN,
    );
    let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
    let e = fails(ns, &refs).await;
    assert!(e.contains("not one of this server's ACL files"), "{e}");

    let text = run(
        ns,
        signed(
            &["deleteAclConfig", "-b", &addr, "-a", "publisher01"],
            ADMIN,
        ),
    )
    .await;
    assert!(text.contains("success"), "{text}");
    assert!(!std::fs::read_to_string(&file)
        .unwrap()
        .contains("publisher01"));
    let refs = signed(
        &["deleteAclConfig", "-b", &addr, "-a", "publisher01"],
        ADMIN,
    );
    let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
    fails(ns, &refs).await;

    // Three changes: the file's version counted them.
    let v = run_json(ns, signed(&["clusterAclConfigVersion", "-b", &addr], ADMIN)).await;
    let row = &v[0];
    assert_eq!(row["brokerName"], "acl-plain", "{v}");
    assert!(row["aclFilePath"]
        .as_str()
        .unwrap()
        .ends_with("plain_acl.yml"));
    assert_eq!(row["aclConfigVersionNum"], 3, "{v}");
    let text = run(
        ns,
        signed(&["clusterAclConfigVersion", "-c", "DefaultCluster"], ADMIN),
    )
    .await;
    assert!(text.starts_with("#Cluster Name"), "{text}");

    // Without the admin account nothing changes.
    let e = fails(
        ns,
        &[
            "updateAclConfig",
            "-b",
            &addr,
            "-a",
            "intruder01",
            "-s",
            "intruder-secret",
        ],
    )
    .await;
    assert!(e.contains("NO_PERMISSION"), "{e}");
    broker.shutdown().await;
}
