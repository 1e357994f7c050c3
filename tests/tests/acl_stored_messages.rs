//! ACL for the requests that name a stored message by its commitlog offset rather than
//! by topic (docs/security.md#request-table): END_TRANSACTION, VIEW_MESSAGE_BY_ID and
//! CONSUMER_SEND_MSG_BACK need their permission on the topic the stored message
//! belongs to, whatever topic (if any) the request names; a message that cannot be
//! read is a refusal.

use vostok_remoting::protocol::header::{
    ConsumerSendMsgBackRequestHeader, EndTransactionRequestHeader, SendMessageRequestHeaderV2,
    SendMessageResponseHeader, ViewMessageRequestHeader,
};
use vostok_remoting::protocol::message::id::decode_offset_msg_id;
use vostok_remoting::protocol::message::property::{self, push_pair};
use vostok_remoting::protocol::message::sysflag;
use vostok_remoting::protocol::{request_code as code, response_code};
use vostok_remoting::RemotingCommand;
use vostok_tests::acl::{call, home, signed_client};
use vostok_tests::client::TestClient;
use vostok_tests::{Broker, BrokerOptions};

const ACL: &str = r#"
accounts:
  - accessKey: owner-of-b
    secretKey: owner-b-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - TopicB=PUB|SUB
    groupPerms:
      - GroupB=SUB
  - accessKey: holder-of-a
    secretKey: holder-a-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms:
      - TopicA=PUB|SUB
    groupPerms:
      - GroupA=SUB
  - accessKey: admin-account
    secretKey: admin-secret
    admin: true
"#;

/// A client signing with `ak`/`sk`.
fn client(ak: &str, sk: &str) -> TestClient {
    TestClient {
        remoting: signed_client(ak, sk),
        client_id: format!("127.0.0.1@{ak}"),
    }
}

struct Setup {
    broker: Broker,
    _home: tempfile::TempDir,
    owner: TestClient,
    holder: TestClient,
    admin: TestClient,
}

async fn setup() -> Setup {
    let home = home(ACL);
    let broker = Broker::start(
        BrokerOptions::default()
            .set("aclEnable", true)
            .set("rocketmqHome", home.path().display()),
    );
    let admin = client("admin-account", "admin-secret");
    for topic in ["TopicA", "TopicB"] {
        let r = admin.create_topic(&broker.addr, topic, 1).await;
        assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    }
    Setup {
        owner: client("owner-of-b", "owner-b-secret"),
        holder: client("holder-of-a", "holder-a-secret"),
        admin,
        broker,
        _home: home,
    }
}

/// The commitlog offset of a message just sent.
fn commit_log_offset(h: &SendMessageResponseHeader) -> i64 {
    decode_offset_msg_id(&h.msg_id)
        .expect("offset message id")
        .1
}

/// A prepared (half) message of producer group `group` to `topic`: (queue offset in
/// the half topic, commitlog offset, message id).
async fn send_half(c: &TestClient, addr: &str, topic: &str, group: &str) -> (i64, i64, String) {
    let mut props = TestClient::properties(None, None);
    push_pair(&mut props, property::TRANSACTION_PREPARED, "true");
    push_pair(&mut props, property::PRODUCER_GROUP, group);
    let header = SendMessageRequestHeaderV2 {
        a: group.into(),
        b: topic.into(),
        c: "TBW102".into(),
        d: 1,
        e: 0,
        f: sysflag::TRANSACTION_PREPARED_TYPE,
        g: vostok_remoting::support::time::now_millis(),
        i: Some(props),
        ..Default::default()
    };
    let r = c
        .call(
            addr,
            RemotingCommand::request_with_header(code::SEND_MESSAGE_V2, &header)
                .with_body(&b"the owner's half message"[..]),
        )
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    let h: SendMessageResponseHeader = r.decode_header().expect("send response header");
    (h.queue_offset, commit_log_offset(&h), h.msg_id)
}

fn end_transaction(
    group: &str,
    half: &(i64, i64, String),
    outcome: i32,
    topic: Option<&str>,
) -> RemotingCommand {
    let header = EndTransactionRequestHeader {
        producer_group: group.into(),
        tran_state_table_offset: half.0,
        commit_log_offset: half.1,
        commit_or_rollback: outcome,
        from_transaction_check: Some(false),
        msg_id: half.2.clone(),
        transaction_id: Some(half.2.clone()),
        topic: topic.map(str::to_owned),
    };
    RemotingCommand::request_with_header(code::END_TRANSACTION, &header)
}

fn assert_refused(r: &RemotingCommand, names: &str) {
    assert_eq!(r.code, response_code::NO_PERMISSION, "{}", r.remark());
    assert!(r.remark().contains(names), "{}", r.remark());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_of_topic_a_cannot_end_a_transaction_of_topic_b() {
    let s = setup().await;
    let addr = &s.broker.addr;
    let half = send_half(&s.owner, addr, "TopicB", "PG-B").await;

    // Without `topic` (every 4.x client), and naming a topic it may publish to.
    let rollback = sysflag::TRANSACTION_ROLLBACK_TYPE;
    let r = s
        .holder
        .call(addr, end_transaction("PG-B", &half, rollback, None))
        .await;
    assert_refused(&r, "no PUB permission on topic TopicB");
    let r = s
        .holder
        .call(
            addr,
            end_transaction("PG-B", &half, rollback, Some("TopicA")),
        )
        .await;
    assert_refused(&r, "no PUB permission on topic TopicB");
    // An offset where no message starts names nothing: refused too.
    let nowhere = (half.0, half.1 + 1, half.2.clone());
    let r = s
        .holder
        .call(addr, end_transaction("PG-B", &nowhere, rollback, None))
        .await;
    assert_eq!(r.code, response_code::NO_PERMISSION, "{}", r.remark());

    // The owner's commit still goes through, and the message is delivered.
    let commit = sysflag::TRANSACTION_COMMIT_TYPE;
    let r = s
        .owner
        .call(addr, end_transaction("PG-B", &half, commit, None))
        .await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    // Held until the committed message is dispatched.
    let pulled = s
        .admin
        .pull(
            addr,
            "AnyGroup",
            "TopicB",
            0,
            0,
            8,
            Some(std::time::Duration::from_secs(10)),
            "*",
        )
        .await;
    assert_eq!(pulled.messages.len(), 1, "code {}", pulled.code);
    assert_eq!(&pulled.messages[0].body[..], b"the owner's half message");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn viewing_a_message_by_id_needs_sub_on_its_topic() {
    let s = setup().await;
    let addr = &s.broker.addr;
    let sent = s
        .owner
        .send(
            addr,
            "TopicB",
            0,
            &b"secret of b"[..],
            TestClient::properties(None, None),
        )
        .await;
    let view = |offset: i64| {
        RemotingCommand::request_with_header(
            code::VIEW_MESSAGE_BY_ID,
            &ViewMessageRequestHeader {
                offset,
                topic: None,
            },
        )
    };
    let offset = commit_log_offset(&sent);
    let r = s.holder.call(addr, view(offset)).await;
    assert_refused(&r, "no SUB permission on topic TopicB");
    let r = s.holder.call(addr, view(offset + 1)).await;
    assert_eq!(r.code, response_code::NO_PERMISSION, "{}", r.remark());
    let r = call(&s.owner.remoting, addr, view(offset)).await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
    assert!(
        r.body.windows(11).any(|w| w == b"secret of b"),
        "the record comes back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sending_back_a_message_needs_sub_on_its_topic() {
    let s = setup().await;
    let addr = &s.broker.addr;
    let of_b = s
        .owner
        .send(
            addr,
            "TopicB",
            0,
            &b"secret of b"[..],
            TestClient::properties(None, None),
        )
        .await;
    let of_a = s
        .holder
        .send(
            addr,
            "TopicA",
            0,
            &b"of a"[..],
            TestClient::properties(None, None),
        )
        .await;
    // Straight to the group's DLQ, which the group then reads.
    let back = |offset: i64| {
        RemotingCommand::request_with_header(
            code::CONSUMER_SEND_MSG_BACK,
            &ConsumerSendMsgBackRequestHeader {
                offset,
                group: "GroupA".into(),
                delay_level: -1,
                origin_msg_id: None,
                origin_topic: Some("TopicA".into()),
                unit_mode: None,
                max_reconsume_times: None,
            },
        )
    };
    let r = s.holder.call(addr, back(commit_log_offset(&of_b))).await;
    assert_refused(&r, "no SUB permission on topic TopicB");
    let r = s.holder.call(addr, back(commit_log_offset(&of_a))).await;
    assert_eq!(r.code, response_code::SUCCESS, "{}", r.remark());
}
