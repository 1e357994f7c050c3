//! The guard against frames as real clients send them: headers written by hand as Java
//! and the C++ client put them on the wire, signatures computed by hand from the
//! algorithm (docs/security.md#signature), never by the code under test.

use std::net::IpAddr;
use std::path::Path;

use vostok_auth::v2::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};
use vostok_auth::{Access, Guard, GuardConfig, Need, Principal, Resource};
use vostok_remoting::command::json_header;
use vostok_remoting::RemotingCommand;

const ACL: &str = r#"
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - TopicA=PUB
      - TopicB=SUB
    groupPerms:
      - GroupDenied=DENY
  - accessKey: Admin1234
    secretKey: admin-secret
    admin: true
  - accessKey: Whitelisted
    secretKey: white-secret
    whiteRemoteAddress: 192.168.1.*
    topicPerms:
      - TopicW=PUB
"#;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn home_with(acl: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    std::fs::write(home.path().join("conf/plain_acl.yml"), acl).unwrap();
    home
}

fn v1(home: &Path) -> Guard {
    Guard::open(&GuardConfig {
        acl_enable: true,
        rocketmq_home: home.to_path_buf(),
        ..GuardConfig::default()
    })
    .unwrap()
    .unwrap()
}

/// A frame decoded as the broker decodes it: header JSON as sent, then the body.
fn frame(header: &str, body: &[u8]) -> RemotingCommand {
    let mut cmd = json_header::decode(header.as_bytes()).unwrap();
    cmd.body = body.to_vec().into();
    cmd
}

/// Java 5.x SEND_MESSAGE_V2, every ext field a string, signed with 12345678.
const JAVA_SEND: &str = r#"{"code":310,"extFields":{"a":"PG","b":"TopicA","c":"TBW102","d":"4","e":"1","f":"0","g":"1700000000000","h":"0","i":"UNIQ_KEY\u0001ABC\u0002WAIT\u0001true\u0002","j":"0","k":"false","m":"false","AccessKey":"RocketMQ","Signature":"KQCmn0T8z8/TpNqvu41DESKWplg="},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}"#;

/// The C++ client's SEND_MESSAGE: ints as JSON numbers (signed as their decimal
/// text), `OnsChannel` added and signed.
const CPP_SEND: &str = r#"{"code":10,"language":"CPP","version":0,"opaque":3,"flag":0,"remark":"","extFields":{"AccessKey":"RocketMQ","OnsChannel":"ALIYUN","Signature":"Xr06eVn0P4NjuchRNPOAUmijxds=","batch":"false","bornTimestamp":1700000000000,"defaultTopic":"TBW102","defaultTopicQueueNums":4,"flag":0,"producerGroup":"PG","properties":"WAIT\u0001true\u0002","queueId":1,"reconsumeTimes":0,"sysFlag":0,"topic":"TopicA","unitMode":"false"}}"#;

/// The C++ client without credentials: empty key, HMAC keyed with the empty secret.
const CPP_UNSIGNED: &str = r#"{"code":38,"language":"CPP","version":0,"opaque":4,"flag":0,"remark":"","extFields":{"AccessKey":"","OnsChannel":"ALIYUN","Signature":"P5ukTU1IB/cs0mYCI0TwJlecUyc=","consumerGroup":"CG"}}"#;

fn topic_a_pub() -> Access<'static> {
    Access::Needs(vec![Need::publish(Resource::topic("TopicA"))])
}

#[test]
fn java_and_cpp_frames_with_the_right_key_are_accepted() {
    let home = home_with(ACL);
    let guard = v1(home.path());
    let java = frame(JAVA_SEND, b"Hello");
    let principal = guard.check(ip("127.0.0.1"), &java, topic_a_pub).unwrap();
    assert_eq!(principal.access_key(), Some("RocketMQ"));
    let cpp = frame(CPP_SEND, b"Hello");
    guard.check(ip("127.0.0.1"), &cpp, topic_a_pub).unwrap();
    // The same signature algorithm explains the C++ client's unsigned requests.
    let unsigned = frame(CPP_UNSIGNED, b"");
    assert!(vostok_remoting::auth::signature::verify(
        "",
        &unsigned.ext_fields,
        b"",
        0,
        unsigned.ext_fields.get("Signature").unwrap()
    ));
}

#[test]
fn wrong_signature_unknown_key_and_missing_key_are_refused_with_clear_remarks() {
    let home = home_with(ACL);
    let guard = v1(home.path());
    let tampered = frame(JAVA_SEND, b"Hellp");
    let e = guard
        .check(ip("127.0.0.1"), &tampered, topic_a_pub)
        .unwrap_err();
    assert!(
        e.reason
            .contains("signature check failed for AccessKey RocketMQ"),
        "{e}"
    );
    let wrong_key = frame(
        &JAVA_SEND.replace("\"AccessKey\":\"RocketMQ\"", "\"AccessKey\":\"Unknown99\""),
        b"Hello",
    );
    let e = guard
        .check(ip("127.0.0.1"), &wrong_key, topic_a_pub)
        .unwrap_err();
    assert!(e.reason.contains("unknown AccessKey Unknown99"), "{e}");
    let e = guard
        .check(ip("127.0.0.1"), &frame(CPP_UNSIGNED, b""), || Access::Open)
        .unwrap_err();
    assert!(e.reason.contains("no AccessKey"), "{e}");
    let mut none = RemotingCommand::request(10);
    none.ext_fields.insert("topic", "TopicA");
    let e = guard
        .check(ip("127.0.0.1"), &none, topic_a_pub)
        .unwrap_err();
    assert!(
        e.reason.contains("no AccessKey on request SEND_MESSAGE"),
        "{e}"
    );
    assert!(!e.reason.contains("12345678"));
}

#[test]
fn unique_key_query_is_left_out_only_for_clients_up_to_4_9_3() {
    let home = home_with(ACL);
    let guard = v1(home.path());
    let query = |version: i32, sig: &str| {
        frame(
            &format!(
                r#"{{"code":12,"extFields":{{"topic":"TopicA","key":"ABC","maxNum":"32","beginTimestamp":"0","endTimestamp":"9223372036854775807","_UNIQUE_KEY_QUERY":"true","AccessKey":"RocketMQ","Signature":"{sig}"}},"flag":0,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":{version}}}"#
            ),
            b"",
        )
    };
    let signed_without = "XZ8aXRmIdSIR8GpUYqONfo0ziB0=";
    let signed_with = "h/9E3yLHeHbQ97eNqiD6+i/IPlY=";
    let open = || Access::Open;
    assert!(guard
        .check(ip("127.0.0.1"), &query(399, signed_without), open)
        .is_ok());
    assert!(guard
        .check(ip("127.0.0.1"), &query(401, signed_without), open)
        .is_err());
    assert!(guard
        .check(ip("127.0.0.1"), &query(401, signed_with), open)
        .is_ok());
}

#[test]
fn white_addresses() {
    let home = home_with(ACL);
    let guard = v1(home.path());
    // Global white: no key needed at all.
    let unsigned = RemotingCommand::request(17);
    assert!(matches!(
        guard.check(ip("10.10.103.7"), &unsigned, || Access::Admin),
        Ok(Principal::Trusted)
    ));
    assert!(guard
        .check(ip("10.10.104.7"), &unsigned, || Access::Admin)
        .is_err());
    // Account white: no signature needed, but the account's permissions still apply.
    let mut white = RemotingCommand::request(310);
    white.ext_fields.insert("AccessKey", "Whitelisted");
    let pub_on = |t: &'static str| move || Access::Needs(vec![Need::publish(Resource::topic(t))]);
    assert!(guard
        .check(ip("192.168.1.20"), &white, pub_on("TopicW"))
        .is_ok());
    assert!(guard
        .check(ip("192.168.1.20"), &white, pub_on("TopicX"))
        .is_err());
    assert!(
        guard
            .check(ip("192.168.2.20"), &white, pub_on("TopicW"))
            .is_err(),
        "not white: unsigned"
    );
}

#[test]
fn a_signer_proves_its_account_whatever_its_address() {
    let home = home_with(ACL);
    let guard = v1(home.path());
    let admin = signed(19002, "Admin1234", "admin-secret", &[]);
    assert_eq!(guard.signer(&admin).unwrap().access_key, "Admin1234");
    // Neither a global nor an account white address stands in for the signature.
    let unsigned = RemotingCommand::request(19002);
    assert!(guard
        .check(ip("10.10.103.7"), &unsigned, || Access::Admin)
        .is_ok());
    assert!(guard
        .signer(&unsigned)
        .unwrap_err()
        .reason
        .contains("must be signed"));
    let mut white = RemotingCommand::request(19002);
    white.ext_fields.insert("AccessKey", "Whitelisted");
    let refused = guard.signer(&white).unwrap_err();
    assert!(
        refused.reason.contains("signature check failed"),
        "{}",
        refused.reason
    );
    let forged = signed(19002, "Admin1234", "not-the-secret", &[]);
    assert!(guard.signer(&forged).is_err());
    let unknown = signed(19002, "Nobody", "x", &[]);
    assert!(guard
        .signer(&unknown)
        .unwrap_err()
        .reason
        .contains("Nobody"));
}

fn signed(code: i32, ak: &str, sk: &str, fields: &[(&str, &str)]) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(code);
    for (k, v) in fields {
        cmd.ext_fields.insert(k, v);
    }
    vostok_remoting::auth::SessionCredentials::new(ak, sk).sign(&mut cmd);
    cmd
}

#[test]
fn permissions_defaults_and_admin_only_codes() {
    let home = home_with(ACL);
    let guard = v1(home.path());
    let user = signed(10, "RocketMQ", "12345678", &[]);
    let lo = ip("127.0.0.1");
    let check = |a: Access| {
        guard
            .check(lo, &user, || a)
            .map(|_| ())
            .map_err(|d| d.reason)
    };
    assert!(check(Access::Needs(vec![Need::publish(Resource::topic(
        "TopicA"
    ))]))
    .is_ok());
    let e = check(Access::Needs(vec![Need::subscribe(Resource::topic(
        "TopicA",
    ))]))
    .unwrap_err();
    assert!(
        e.contains("AccessKey RocketMQ has no SUB permission on topic TopicA"),
        "{e}"
    );
    assert!(check(Access::Needs(vec![Need::subscribe(Resource::topic(
        "TopicB"
    ))]))
    .is_ok());
    assert!(
        check(Access::Needs(vec![Need::publish(Resource::topic("Other"))])).is_err(),
        "default DENY"
    );
    assert!(
        check(Access::Needs(vec![Need::subscribe(Resource::group(
            "AnyGroup"
        ))]))
        .is_ok(),
        "default SUB"
    );
    assert!(check(Access::Needs(vec![Need::subscribe(Resource::topic(
        "%RETRY%GroupDenied"
    ))]))
    .is_err());
    assert!(
        check(Access::Needs(vec![Need::publish(Resource::topic(
            "RMQ_SYS_TRACE_TOPIC"
        ))]))
        .is_ok(),
        "trace"
    );
    let e = check(Access::Admin).unwrap_err();
    assert!(
        e.contains("needs an admin account, and AccessKey RocketMQ is not one"),
        "{e}"
    );
    let admin = signed(17, "Admin1234", "admin-secret", &[("topic", "X")]);
    assert!(guard.check(lo, &admin, || Access::Admin).is_ok());
    assert!(guard
        .check(lo, &admin, || Access::Needs(vec![Need::publish(
            Resource::topic("Z")
        )]))
        .is_ok());
}

#[test]
fn a_resource_left_out_is_a_refusal_never_the_default() {
    let home = home_with(ACL);
    let guard = v1(home.path());
    let user = signed(11, "RocketMQ", "12345678", &[]);
    let lo = ip("127.0.0.1");
    let check = |a: Access<'static>| {
        guard
            .check(lo, &user, || a)
            .map(|_| ())
            .map_err(|d| d.reason)
    };
    // Unnamed groups would get the account's default SUB.
    for (access, says) in [
        (
            Access::Needs(vec![Need::subscribe(Resource::group(""))]),
            "names no group",
        ),
        (
            Access::Needs(vec![
                Need::subscribe(Resource::group("G")),
                Need::subscribe(Resource::topic("")),
            ]),
            "names no topic",
        ),
        (
            Access::Unresolved("names no stored message (offset \"7\")".into()),
            "names no stored message",
        ),
    ] {
        let e = check(access).unwrap_err();
        assert!(
            e.contains(says) && e.contains("PULL_MESSAGE") && e.contains("AccessKey RocketMQ"),
            "{e}"
        );
    }
    // An admin holds every permission: nothing is missing for it.
    let admin = signed(11, "Admin1234", "admin-secret", &[]);
    assert!(guard
        .check(lo, &admin, || Access::Unresolved("x".into()))
        .is_ok());
    // The trace topic needs nothing, but does not carry another topic through.
    let trace_and = |other: &'static str| {
        Access::Needs(vec![
            Need::publish(Resource::topic("RMQ_SYS_TRACE_TOPIC")),
            Need::publish(Resource::topic(other)),
        ])
    };
    assert!(check(trace_and("TopicA")).is_ok());
    let e = check(trace_and("Other")).unwrap_err();
    assert!(e.contains("no PUB permission on topic Other"), "{e}");
}

#[test]
fn a_vostok_signature_out_of_the_window_or_on_another_code_is_refused() {
    use vostok_auth::TimeWindow;
    use vostok_remoting::auth::stamp::VOSTOK_SIGNATURE;
    use vostok_remoting::auth::{signature, SIGNATURE};
    let home = home_with(ACL);
    let open = |window: TimeWindow| {
        Guard::open(&GuardConfig {
            acl_enable: true,
            rocketmq_home: home.path().to_path_buf(),
            time_window: window,
            ..GuardConfig::default()
        })
        .unwrap()
        .unwrap()
    };
    let guard = open(TimeWindow::default());
    let lo = ip("127.0.0.1");
    let fresh = signed(310, "RocketMQ", "12345678", &[("b", "TopicA")]);
    assert!(fresh.ext_fields.contains_key(VOSTOK_SIGNATURE));
    guard.check(lo, &fresh, topic_a_pub).unwrap();

    // Captured and sent again under another code: RocketMQ's signature still holds.
    let mut retargeted = fresh.clone();
    retargeted.code = 11;
    let e = guard.check(lo, &retargeted, topic_a_pub).unwrap_err();
    assert!(e.reason.contains("request code or a field name"), "{e}");
    assert!(e.unauthenticated);

    // Signed an hour ago: re-signed here as the client did then.
    let mut old = RemotingCommand::request(310);
    old.ext_fields.insert("b", "TopicA");
    old.ext_fields.insert("AccessKey", "RocketMQ");
    let key = signature::SigningKey::new("12345678");
    let hour_ago = vostok_remoting::support::time::now_millis() - 3_600_000;
    vostok_remoting::auth::stamp::stamp(&key, &mut old, hour_ago);
    let sig = key.sign(&old.ext_fields, &old.body);
    old.ext_fields.insert(SIGNATURE, sig);
    let e = guard.check(lo, &old, topic_a_pub).unwrap_err();
    assert!(e.reason.contains("away from the server's clock"), "{e}");
    let wide = open(TimeWindow {
        max_skew_ms: 2 * 3_600_000,
        ..TimeWindow::default()
    });
    wide.check(lo, &old, topic_a_pub).unwrap();

    // Other clients send none: accepted, unless the broker requires it.
    let java = frame(JAVA_SEND, b"Hello");
    guard.check(lo, &java, topic_a_pub).unwrap();
    let strict = open(TimeWindow {
        required: true,
        ..TimeWindow::default()
    });
    let e = strict.check(lo, &java, topic_a_pub).unwrap_err();
    assert!(e.reason.contains("authenticationTimeRequired"), "{e}");
    strict.check(lo, &fresh, topic_a_pub).unwrap();
}

#[test]
fn acl_2_users_policies_and_migration() {
    let home = home_with(ACL);
    let store = tempfile::tempdir().unwrap();
    let config = GuardConfig {
        authentication_enabled: true,
        authorization_enabled: true,
        migrate_auth_from_v1_enabled: true,
        rocketmq_home: home.path().to_path_buf(),
        metadata_dir: Some(store.path().join("auth")),
        ..GuardConfig::default()
    };
    let guard = Guard::open(&config).unwrap().unwrap();
    let lo = ip("127.0.0.1");
    // Migrated: RocketMQ may publish to TopicA (custom) and subscribe any group (default).
    let user = signed(310, "RocketMQ", "12345678", &[]);
    let needs = |n: Need<'static>| move || Access::Needs(vec![n]);
    assert!(guard
        .check(lo, &user, needs(Need::publish(Resource::topic("TopicA"))))
        .is_ok());
    assert!(guard
        .check(lo, &user, needs(Need::subscribe(Resource::group("G1"))))
        .is_ok());
    let e = guard
        .check(lo, &user, needs(Need::publish(Resource::topic("Other"))))
        .unwrap_err();
    assert!(
        e.reason
            .contains("User:RocketMQ is denied Pub on topic Other"),
        "{e}"
    );
    assert!(guard.check(lo, &user, || Access::Admin).is_err());
    // Admin1234 became a SUPER user.
    let admin = signed(17, "Admin1234", "admin-secret", &[]);
    assert!(guard.check(lo, &admin, || Access::Admin).is_ok());
    assert!(guard.is_super_request(&admin) && !guard.is_super_request(&user));
    let wrong = signed(310, "RocketMQ", "wrong-secret", &[]);
    assert!(guard
        .check(lo, &wrong, || Access::Open)
        .unwrap_err()
        .reason
        .contains("signature check failed"));

    // A new user with a prefixed allow, and a source IP restriction.
    let md = guard.metadata().unwrap();
    md.create_user(UserInfo {
        username: Some("alice".into()),
        password: Some("alice-pw".into()),
        ..UserInfo::default()
    })
    .unwrap();
    md.upsert_acl(
        "User:alice",
        AclInfo {
            subject: None,
            policies: vec![PolicyInfo {
                policy_type: None,
                entries: vec![PolicyEntryInfo {
                    resource: "Topic:orders*".into(),
                    actions: vec!["Pub".into()],
                    source_ips: vec!["127.0.0.0/8".into()],
                    decision: "Allow".into(),
                }],
            }],
        },
    )
    .unwrap();
    let alice = signed(310, "alice", "alice-pw", &[]);
    assert!(guard
        .check(
            lo,
            &alice,
            needs(Need::publish(Resource::topic("orders-eu")))
        )
        .is_ok());
    assert!(guard
        .check(
            ip("10.0.0.1"),
            &alice,
            needs(Need::publish(Resource::topic("orders-eu")))
        )
        .is_err());
    assert!(guard
        .check(
            lo,
            &alice,
            needs(Need::subscribe(Resource::topic("orders-eu")))
        )
        .is_err());
    md.update_user(UserInfo {
        username: Some("alice".into()),
        user_status: Some("disable".into()),
        ..UserInfo::default()
    })
    .unwrap();
    assert!(guard
        .check(lo, &alice, || Access::Open)
        .unwrap_err()
        .reason
        .contains("disabled"));

    // Persisted: a new guard over the same directory knows alice, and keeps migrated
    // users as they are now.
    drop(guard);
    let again = Guard::open(&config).unwrap().unwrap();
    assert!(again.metadata().unwrap().user("alice").is_some());
    let files = std::fs::read_to_string(store.path().join("auth/users.json")).unwrap();
    assert!(files.contains("alice"));
}

/// A scoped request (an administrative read) is an admin's, or a confined user's about
/// its own namespace; a user not confined is refused it. A second reader of the same
/// directory (a name server following the broker's users) sees the change on reload
/// and tells who signed and where it is confined.
#[test]
fn scoped_requests_and_a_follower_of_the_users() {
    let store = tempfile::tempdir().unwrap();
    let config = GuardConfig {
        authentication_enabled: true,
        authorization_enabled: true,
        metadata_dir: Some(store.path().join("auth")),
        ..GuardConfig::default()
    };
    let guard = Guard::open(&config).unwrap().unwrap();
    let follower = vostok_auth::v2::AuthMetadata::open(store.path().join("auth")).unwrap();
    let md = guard.metadata().unwrap();
    let entry = |resource: &str| PolicyEntryInfo {
        resource: resource.into(),
        actions: vec!["Sub".into()],
        source_ips: vec![],
        decision: "Allow".into(),
    };
    for (name, resource) in [("alice", "Namespace:ns1"), ("carol", "Topic:*")] {
        md.create_user(UserInfo {
            username: Some(name.into()),
            password: Some(format!("{name}-pw")),
            ..UserInfo::default()
        })
        .unwrap();
        let acl = AclInfo {
            subject: None,
            policies: vec![PolicyInfo {
                policy_type: None,
                entries: vec![entry(resource)],
            }],
        };
        md.upsert_acl(&format!("User:{name}"), acl).unwrap();
    }
    let lo = ip("127.0.0.1");
    let alice = signed(21, "alice", "alice-pw", &[]);
    let carol = signed(21, "carol", "carol-pw", &[]);
    let scoped = |n: &'static str| move || Access::Scoped(vec![Resource::topic(n)]);
    let list = || Access::Scoped(vec![]);
    let principal = guard.check(lo, &alice, list).unwrap();
    assert_eq!(principal.confinement().unwrap().namespaces(), ["ns1"]);
    assert!(guard.check(lo, &alice, scoped("ns1%orders")).is_ok());
    let e = guard.check(lo, &alice, scoped("ns2%orders")).unwrap_err();
    assert!(e.reason.contains("confined to namespace ns1"), "{e}");
    let e = guard.check(lo, &carol, list).unwrap_err();
    assert!(e.reason.contains("needs a SUPER user"), "{e}");

    let window = vostok_auth::TimeWindow::default();
    assert!(
        vostok_auth::namespace::of_signer(&follower, &alice, &window).is_none(),
        "not read yet"
    );
    assert!(follower.reload().unwrap());
    assert!(!follower.reload().unwrap(), "nothing new");
    let confinement = vostok_auth::namespace::of_signer(&follower, &alice, &window)
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(confinement.namespaces(), ["ns1"]);
    let unconfined = vostok_auth::namespace::of_signer(&follower, &carol, &window).unwrap();
    assert_eq!(unconfined.unwrap(), None);
    let wrong = signed(21, "alice", "wrong", &[]);
    assert!(
        vostok_auth::namespace::of_signer(&follower, &wrong, &window)
            .unwrap()
            .is_err()
    );
}
