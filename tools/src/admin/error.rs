//! Why a sub-command failed, naming the request and the peer in front of the SDK's
//! error.

use vostok_client::ClientError;
use vostok_remoting::protocol::{request_code, response_code};

/// Why a sub-command failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// A request failed: `request` is its request code's name.
    #[error("{}", request_failed(.request, .source))]
    Request {
        request: &'static str,
        #[source]
        source: ClientError,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
}

/// `REQUEST to ADDR failed: ...` or `REQUEST to ADDR answered NAME (code): remark`.
fn request_failed(request: &str, error: &ClientError) -> String {
    match error {
        ClientError::Remoting { addr, source } => format!("{request} to {addr} failed: {source}"),
        ClientError::Broker { addr, code, remark } => {
            let name = response_code::name(*code);
            if remark.is_empty() {
                format!("{request} to {addr} answered {name} ({code})")
            } else {
                format!("{request} to {addr} answered {name} ({code}): {remark}")
            }
        }
        ClientError::Header { addr, source } => {
            format!("{request} answer from {addr} has a bad header: {source}")
        }
        ClientError::Decode(source) => format!("{request} answer cannot be decoded: {source}"),
        other => format!("{request} failed: {other}"),
    }
}

/// Names the request a [`ClientError`] comes from: `.map_err(during(CODE))`.
pub fn during(code: i32) -> impl Fn(ClientError) -> AdminError {
    move |source| AdminError::Request {
        request: request_code::name(code),
        source,
    }
}

/// `None` when the broker answered one of `codes`: an expected outcome (a request the
/// broker does not serve, a group not online there), not a failure.
pub fn unless_answered<T>(
    result: Result<T, ClientError>,
    codes: &[i32],
) -> Result<Option<T>, ClientError> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.response_code().is_some_and(|c| codes.contains(&c)) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vostok_remoting::DecodeError;

    #[test]
    fn failed_requests_name_the_request_and_the_peer() {
        let broker = ClientError::Broker {
            code: response_code::TOPIC_NOT_EXIST,
            remark: "no route".into(),
            addr: "1.2.3.4:9876".into(),
        };
        let e = during(request_code::GET_ROUTEINFO_BY_TOPIC)(broker);
        assert_eq!(
            e.to_string(),
            "GET_ROUTEINFO_BY_TOPIC to 1.2.3.4:9876 answered TOPIC_NOT_EXIST (17): no route"
        );
        let decode = ClientError::Decode(DecodeError::Invalid {
            what: "TopicList",
            reason: "bad".into(),
        });
        let e = during(request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER)(decode);
        assert!(
            e.to_string()
                .starts_with("GET_ALL_TOPIC_LIST_FROM_NAMESERVER answer cannot be decoded"),
            "{e}"
        );
    }

    #[test]
    fn expected_codes_are_outcomes() {
        let not_online = || ClientError::Broker {
            code: response_code::CONSUMER_NOT_ONLINE,
            remark: String::new(),
            addr: "a".into(),
        };
        let codes = [response_code::CONSUMER_NOT_ONLINE];
        assert!(matches!(
            unless_answered::<()>(Err(not_online()), &codes),
            Ok(None)
        ));
        assert!(matches!(unless_answered(Ok(1), &codes), Ok(Some(1))));
        assert!(unless_answered::<()>(Err(not_online()), &[]).is_err());
    }
}
