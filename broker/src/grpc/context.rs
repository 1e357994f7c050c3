//! What every request says about its client, from the gRPC metadata
//! (docs/grpc.md#metadata): `x-mq-client-id` (required, as in Apache's proxy),
//! `x-mq-language`, `x-mq-client-version`, `x-mq-namespace`, and the peer address.

use std::net::SocketAddr;

use tonic::metadata::MetadataMap;
use vostok_remoting::auth::grpc::{self as grpc_auth, GrpcAuthorization};
use vostok_remoting::LanguageCode;

use super::proto::{Code, Resource, Status};
use super::status::status;

/// The client behind one request.
#[derive(Debug, Clone)]
pub(crate) struct RequestContext {
    pub(crate) client_id: String,
    pub(crate) language: LanguageCode,
    pub(crate) namespace: String,
    pub(crate) remote: SocketAddr,
    pub(crate) local: SocketAddr,
    /// The `authorization` metadata, when sent and well formed.
    pub(crate) authorization: Option<GrpcAuthorization>,
    /// `x-mq-date-time`, what `authorization` signs.
    pub(crate) date_time: String,
}

fn text(metadata: &MetadataMap, key: &str) -> String {
    metadata
        .get(key)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_owned()
}

/// The language as the remoting protocol names it; the 5.x clients send a
/// `LanguageCode` name (`JAVA`, `PYTHON`, `GO`, `HTTP` for Node.js, ...).
fn language(name: &str) -> LanguageCode {
    match name.to_ascii_uppercase().as_str() {
        "GOLANG" => LanguageCode::Go,
        "NODE_JS" | "NODEJS" => LanguageCode::NodeJs,
        "DOT_NET" | "CSHARP" => LanguageCode::Dotnet,
        other => LanguageCode::from_name(other),
    }
}

impl RequestContext {
    /// Reads the metadata of a request; a request without a client id gets
    /// CLIENT_ID_REQUIRED.
    pub(crate) fn of<T>(request: &tonic::Request<T>) -> Result<RequestContext, Status> {
        let unknown = SocketAddr::from(([0, 0, 0, 0], 0));
        let metadata = request.metadata();
        let client_id = text(metadata, "x-mq-client-id");
        if client_id.is_empty() {
            return Err(status(
                Code::ClientIdRequired,
                "x-mq-client-id is required in the request metadata",
            ));
        }
        let local = request
            .extensions()
            .get::<tonic::transport::server::TcpConnectInfo>()
            .and_then(|i| i.local_addr)
            .unwrap_or(unknown);
        Ok(RequestContext {
            client_id,
            language: language(&text(metadata, "x-mq-language")),
            namespace: text(metadata, "x-mq-namespace"),
            remote: request.remote_addr().unwrap_or(unknown),
            local,
            authorization: metadata
                .get(grpc_auth::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(GrpcAuthorization::parse),
            date_time: text(metadata, grpc_auth::DATE_TIME),
        })
    }

    /// The broker's name of a topic or group: `namespace%name` when the resource (or
    /// the request) has a namespace, as the remoting clients write it.
    pub(crate) fn name_of(&self, resource: Option<&Resource>) -> String {
        let Some(r) = resource else {
            return String::new();
        };
        let ns = if r.resource_namespace.is_empty() {
            &self.namespace
        } else {
            &r.resource_namespace
        };
        if ns.is_empty() || r.name.starts_with(&format!("{ns}%")) {
            r.name.clone()
        } else {
            format!("{ns}%{}", r.name)
        }
    }

    /// A resource as the client knows it: without the namespace prefix.
    pub(crate) fn resource(&self, name: &str) -> Resource {
        let (ns, plain) = match name.split_once('%') {
            Some((ns, rest)) if !self.namespace.is_empty() && ns == self.namespace => {
                (ns.to_owned(), rest.to_owned())
            }
            _ => (String::new(), name.to_owned()),
        };
        Resource {
            resource_namespace: ns,
            name: plain,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(pairs: &[(&'static str, &str)]) -> tonic::Request<()> {
        let mut r = tonic::Request::new(());
        for (k, v) in pairs {
            r.metadata_mut().insert(*k, v.parse().unwrap());
        }
        r
    }

    #[test]
    fn a_request_without_client_id_is_refused() {
        let e = RequestContext::of(&request(&[])).unwrap_err();
        assert_eq!(e.code, Code::ClientIdRequired as i32);
    }

    #[test]
    fn language_and_namespace_are_read() {
        let ctx = RequestContext::of(&request(&[
            ("x-mq-client-id", "c1"),
            ("x-mq-language", "PYTHON"),
            ("x-mq-namespace", "ns"),
        ]))
        .unwrap();
        assert_eq!(ctx.language, LanguageCode::Python);
        let topic = Resource {
            resource_namespace: String::new(),
            name: "T".into(),
        };
        assert_eq!(ctx.name_of(Some(&topic)), "ns%T");
        assert_eq!(ctx.resource("ns%T").name, "T");
        assert_eq!(language("GOLANG"), LanguageCode::Go);
        assert_eq!(language("whatever"), LanguageCode::Other);
    }
}
