//! QueryRoute and QueryAssignment (Apache's `RouteActivity`; docs/grpc.md#routes).
//!
//! The route is the name server's, as for a remoting client, with every broker
//! address turned into its gRPC endpoint (the broker's host and this broker's gRPC
//! port: Apache's "local" proxy mode, where every broker serves gRPC on the same
//! port). **Vostok differs:** a topic the name server does not know is auto-created on
//! this broker (when `autoCreateTopicEnable`) and answered from it, so a 5.x client
//! needs no set-up; Apache answers TOPIC_NOT_FOUND. Every queue accepts every message
//! type unless the topic's `message.type` attribute names one.

use std::net::IpAddr;
use std::time::Duration;

use vostok_remoting::protocol::body::TopicConfig;
use vostok_remoting::protocol::header::GetRouteInfoRequestHeader;
use vostok_remoting::protocol::route::{BrokerData, QueueData, TopicRouteData};
use vostok_remoting::protocol::topic::{self, perm};
use vostok_remoting::protocol::{request_code, response_code};
use vostok_remoting::{Channel, RemotingCommand};

use super::client::{valid_group, valid_topic};
use super::context::RequestContext;
use super::endpoint::GrpcService;
use super::proto::{
    Address, AddressScheme, Assignment, Broker as ProtoBroker, Code, Endpoints, MessageQueue,
    MessageType, Permission, QueryAssignmentRequest, QueryAssignmentResponse, QueryRouteRequest,
    QueryRouteResponse, Resource, Status,
};
use super::status::{ok, status};
use crate::ops::auto_create::{create_topic_in_send, NotCreated};
use crate::state::Broker;

/// How long a route lookup waits for a name server.
const NAMESRV_TIMEOUT: Duration = Duration::from_secs(3);

/// The topic attribute naming the message types a topic takes (Apache's
/// `TopicAttributes.TOPIC_MESSAGE_TYPE_ATTRIBUTE`).
const MESSAGE_TYPE_ATTRIBUTE: &str = "message.type";

pub(crate) async fn query_route(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: QueryRouteRequest,
) -> QueryRouteResponse {
    let topic = ctx.name_of(request.topic.as_ref());
    let result = async {
        valid_topic(&topic)?;
        route_of(&svc.broker, &topic, svc.session_channel(ctx).as_ref()).await
    }
    .await;
    let route = match result {
        Ok(route) => route,
        Err(status) => {
            return QueryRouteResponse {
                status: Some(status),
                message_queues: Vec::new(),
            }
        }
    };
    let types = accepted_types(svc.broker.storage.topics.get(&topic).as_ref());
    let resource = request.topic.unwrap_or_default();
    let mut queues = Vec::new();
    for queue_data in &route.queue_datas {
        let Some(broker_data) = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == queue_data.broker_name)
        else {
            continue;
        };
        for (id, addr) in &broker_data.broker_addrs {
            let broker = proto_broker(broker_data, *id, addr, svc.grpc_port);
            queues.extend(message_queues(queue_data, &resource, &types, broker));
        }
    }
    QueryRouteResponse {
        status: Some(ok()),
        message_queues: queues,
    }
}

pub(crate) async fn query_assignment(
    svc: &GrpcService,
    ctx: &RequestContext,
    request: QueryAssignmentRequest,
) -> QueryAssignmentResponse {
    let topic = ctx.name_of(request.topic.as_ref());
    let group = ctx.name_of(request.group.as_ref());
    let result = async {
        valid_topic(&topic)?;
        valid_group(&group)?;
        route_of(&svc.broker, &topic, svc.session_channel(ctx).as_ref()).await
    }
    .await;
    let route = match result {
        Ok(route) => route,
        Err(status) => {
            return QueryAssignmentResponse {
                status: Some(status),
                assignments: Vec::new(),
            }
        }
    };
    let fifo = svc
        .broker
        .consumers
        .subscriptions
        .get(&group)
        .is_some_and(|g| g.consume_message_orderly);
    let resource = request.topic.unwrap_or_default();
    let mut assignments = Vec::new();
    for queue_data in &route.queue_datas {
        if !perm::is_readable(queue_data.perm) || queue_data.read_queue_nums <= 0 {
            continue;
        }
        let Some(broker_data) = route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == queue_data.broker_name)
        else {
            continue;
        };
        let Some(addr) = broker_data.broker_addrs.get(&0) else {
            continue;
        };
        let broker = proto_broker(broker_data, 0, addr, svc.grpc_port);
        let ids: Vec<i32> = if fifo {
            (0..queue_data.read_queue_nums).collect()
        } else {
            // One assignment per broker: the consumer pops every queue of it.
            vec![-1]
        };
        for id in ids {
            assignments.push(Assignment {
                message_queue: Some(MessageQueue {
                    topic: Some(resource.clone()),
                    id,
                    permission: permission(queue_data.perm) as i32,
                    broker: Some(broker.clone()),
                    accept_message_types: Vec::new(),
                }),
            });
        }
    }
    let status = if assignments.is_empty() {
        status(Code::Forbidden, "no readable queue")
    } else {
        ok()
    };
    QueryAssignmentResponse {
        status: Some(status),
        assignments,
    }
}

/// The topic's route from the name servers, or from this broker alone when they do
/// not know it (auto-creating it for the client on `client` when allowed).
pub(crate) async fn route_of(
    broker: &Broker,
    topic_name: &str,
    client: Option<&Channel>,
) -> Result<TopicRouteData, Status> {
    let header = GetRouteInfoRequestHeader {
        topic: topic_name.to_owned(),
        accept_standard_json_only: None,
    };
    for addr in &broker.namesrv.addrs {
        let request =
            RemotingCommand::request_with_header(request_code::GET_ROUTEINFO_BY_TOPIC, &header);
        let Ok(response) = broker
            .namesrv
            .client
            .invoke_sync(addr, request, NAMESRV_TIMEOUT)
            .await
        else {
            continue;
        };
        match response.code {
            response_code::SUCCESS => {
                if let Ok(route) = TopicRouteData::decode(&response.body) {
                    if !route.queue_datas.is_empty() {
                        return Ok(route);
                    }
                }
                break;
            }
            _ => break,
        }
    }
    let local = match broker.storage.topics.get(topic_name) {
        Some(config) => Ok(config),
        None if broker.runtime.auto_create_topic_enable()
            && !topic::is_system_topic(topic_name) =>
        {
            create_topic_in_send(
                &broker.storage.topics,
                &broker.consumers.clients,
                client,
                topic_name,
                topic::AUTO_CREATE_TOPIC_KEY_TOPIC,
                broker.config.default_topic_queue_nums,
                0,
            )
        }
        None => Err(NotCreated::NotAllowed(
            "autoCreateTopicEnable is off".to_owned(),
        )),
    };
    let config = local.map_err(|reason| {
        status(
            Code::TopicNotFound,
            format!("topic[{topic_name}] not exist, apply first please! ({reason})"),
        )
    })?;
    Ok(local_route(broker, &config))
}

fn local_route(broker: &Broker, config: &TopicConfig) -> TopicRouteData {
    let name = broker.config.broker_name.clone();
    TopicRouteData {
        broker_datas: vec![BrokerData {
            broker_addrs: [(broker.config.broker_id, broker.broker_addr.to_string())].into(),
            broker_name: name.clone(),
            cluster: broker.config.broker_cluster_name.clone(),
            ..Default::default()
        }],
        queue_datas: vec![QueueData {
            broker_name: name,
            perm: config.perm & broker.runtime.broker_permission(),
            read_queue_nums: config.read_queue_nums,
            topic_sys_flag: config.topic_sys_flag,
            write_queue_nums: config.write_queue_nums,
        }],
        ..Default::default()
    }
}

fn proto_broker(data: &BrokerData, id: i64, addr: &str, grpc_port: u16) -> ProtoBroker {
    let host = addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(addr);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let scheme = match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => AddressScheme::IPv4,
        Ok(IpAddr::V6(_)) => AddressScheme::IPv6,
        Err(_) => AddressScheme::DomainName,
    };
    ProtoBroker {
        name: data.broker_name.clone(),
        id: id as i32,
        endpoints: Some(Endpoints {
            scheme: scheme as i32,
            addresses: vec![Address {
                host: host.to_owned(),
                port: i32::from(grpc_port),
            }],
        }),
    }
}

fn permission(p: i32) -> Permission {
    match (perm::is_readable(p), perm::is_writeable(p)) {
        (true, true) => Permission::ReadWrite,
        (true, false) => Permission::Read,
        (false, true) => Permission::Write,
        (false, false) => Permission::None,
    }
}

/// The message types a topic takes: its `message.type` attribute, else all four.
fn accepted_types(config: Option<&TopicConfig>) -> Vec<i32> {
    let attribute = config.and_then(|c| {
        c.attributes
            .get(MESSAGE_TYPE_ATTRIBUTE)
            .or_else(|| c.attributes.get(&format!("+{MESSAGE_TYPE_ATTRIBUTE}")))
    });
    let one = match attribute.map(|s| s.to_ascii_uppercase()) {
        Some(t) if t == "NORMAL" => Some(MessageType::Normal),
        Some(t) if t == "FIFO" => Some(MessageType::Fifo),
        Some(t) if t == "DELAY" => Some(MessageType::Delay),
        Some(t) if t == "TRANSACTION" => Some(MessageType::Transaction),
        _ => None,
    };
    match one {
        Some(t) => vec![t as i32],
        None => [
            MessageType::Normal,
            MessageType::Fifo,
            MessageType::Delay,
            MessageType::Transaction,
        ]
        .map(|t| t as i32)
        .to_vec(),
    }
}

/// The queues of one broker for one queue data (`genMessageQueueFromQueueData`): the
/// read-only ones first, then write-only, then read-write, numbered from 0.
fn message_queues(
    data: &QueueData,
    topic: &Resource,
    types: &[i32],
    broker: ProtoBroker,
) -> Vec<MessageQueue> {
    let (readable, writeable) = (perm::is_readable(data.perm), perm::is_writeable(data.perm));
    let (mut r, mut w, mut rw, mut n) = (0, 0, 0, 0);
    if readable && writeable {
        rw = data.write_queue_nums.min(data.read_queue_nums);
        r = data.read_queue_nums - rw;
        w = data.write_queue_nums - rw;
    } else if writeable {
        w = data.write_queue_nums;
    } else if readable {
        r = data.read_queue_nums;
    } else {
        n = data.write_queue_nums.max(data.read_queue_nums).max(1);
    }
    let mut out = Vec::new();
    let mut id = 0;
    for (count, permission) in [
        (r, Permission::Read),
        (w, Permission::Write),
        (rw, Permission::ReadWrite),
        (n, Permission::None),
    ] {
        for _ in 0..count {
            out.push(MessageQueue {
                topic: Some(topic.clone()),
                id,
                permission: permission as i32,
                broker: Some(broker.clone()),
                accept_message_types: types.to_vec(),
            });
            id += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_split_by_permission_as_apache_does() {
        let data = QueueData {
            broker_name: "b".into(),
            perm: perm::READ | perm::WRITE,
            read_queue_nums: 4,
            topic_sys_flag: 0,
            write_queue_nums: 2,
        };
        let broker = ProtoBroker::default();
        let queues = message_queues(&data, &Resource::default(), &[1], broker);
        let perms: Vec<i32> = queues.iter().map(|q| q.permission).collect();
        assert_eq!(
            perms,
            vec![
                Permission::Read as i32,
                Permission::Read as i32,
                Permission::ReadWrite as i32,
                Permission::ReadWrite as i32
            ]
        );
        assert_eq!(queues.last().map(|q| q.id), Some(3));
    }

    #[test]
    fn endpoints_use_the_grpc_port() {
        let data = BrokerData {
            broker_name: "b".into(),
            ..Default::default()
        };
        let b = proto_broker(&data, 0, "10.1.2.3:10911", 8081);
        let e = b.endpoints.unwrap();
        assert_eq!(e.scheme, AddressScheme::IPv4 as i32);
        assert_eq!(e.addresses[0].host, "10.1.2.3");
        assert_eq!(e.addresses[0].port, 8081);
    }

    #[test]
    fn a_topic_takes_every_type_unless_its_attribute_says() {
        assert_eq!(accepted_types(None).len(), 4);
        let mut c = TopicConfig::new("T", 1);
        c.attributes.insert("+message.type".into(), "FIFO".into());
        assert_eq!(accepted_types(Some(&c)), vec![MessageType::Fifo as i32]);
    }
}
