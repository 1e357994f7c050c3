//! Credentials and the hook that signs a client's requests (Java `SessionCredentials`
//! and `AclClientRPCHook`).

use std::fmt;

use super::signature::SigningKey;
use super::stamp;
use super::{ACCESS_KEY, SECURITY_TOKEN, SIGNATURE};
use crate::command::RemotingCommand;
use crate::processor::RpcHook;
use crate::support::time::now_millis;

/// An access key and its secret, plus an optional security token. `Debug` never
/// shows the secret or the token.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionCredentials {
    pub access_key: String,
    pub secret_key: String,
    pub security_token: Option<String>,
}

impl SessionCredentials {
    pub fn new(access_key: impl Into<String>, secret_key: impl Into<String>) -> Self {
        SessionCredentials {
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            security_token: None,
        }
    }

    /// Signs `request` in place: `AccessKey` (and `SecurityToken`) first, so that
    /// they are signed too, then Vostok's `VostokSignature` (the code and the time,
    /// see [`stamp`]), then `Signature` over every field and the body. Keys the HMAC
    /// for this request only: [`AclClientHook`] keys it once.
    pub fn sign(&self, request: &mut RemotingCommand) {
        self.sign_with(&SigningKey::new(&self.secret_key), request);
    }

    /// [`SessionCredentials::sign`] with `key`, the HMAC keyed with this secret.
    fn sign_with(&self, key: &SigningKey, request: &mut RemotingCommand) {
        request.ext_fields.insert(ACCESS_KEY, &self.access_key);
        if let Some(token) = &self.security_token {
            request.ext_fields.insert(SECURITY_TOKEN, token);
        }
        stamp::stamp(key, request, now_millis());
        let sig = key.sign(&request.ext_fields, &request.body);
        request.ext_fields.insert(SIGNATURE, sig);
    }
}

impl fmt::Debug for SessionCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionCredentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .field(
                "security_token",
                &self.security_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Signs every request a client sends, as Java's `AclClientRPCHook` does, just before
/// the frame is written, with the HMAC keyed once.
#[derive(Debug, Clone)]
pub struct AclClientHook {
    credentials: SessionCredentials,
    key: SigningKey,
}

impl AclClientHook {
    pub fn new(credentials: SessionCredentials) -> Self {
        let key = SigningKey::new(&credentials.secret_key);
        AclClientHook { credentials, key }
    }

    pub fn credentials(&self) -> &SessionCredentials {
        &self.credentials
    }
}

impl RpcHook for AclClientHook {
    fn before_request(&self, _remote_addr: &str, request: &mut RemotingCommand) {
        self.credentials.sign_with(&self.key, request);
    }

    fn after_response(&self, _: &str, _: &RemotingCommand, _: &mut RemotingCommand) {}

    fn wants_response(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::signature;
    use crate::command::json_header;
    use bytes::BytesMut;

    #[test]
    fn a_signed_request_verifies_after_a_trip_through_json() {
        let creds = SessionCredentials {
            security_token: Some("tok".into()),
            ..SessionCredentials::new("RocketMQ", "12345678")
        };
        let mut request = RemotingCommand::request(310).with_body(&b"hello"[..]);
        request.ext_fields.insert("b", "TopicA");
        request.ext_fields.insert("e", "3");
        creds.sign(&mut request);
        let mut out = BytesMut::new();
        json_header::encode(&request, &mut out);
        let decoded = json_header::decode(&out).unwrap();
        let sig = decoded.ext_fields.get(SIGNATURE).unwrap();
        assert!(signature::verify(
            "12345678",
            &decoded.ext_fields,
            b"hello",
            decoded.version,
            sig
        ));
        assert_eq!(decoded.ext_fields.get(ACCESS_KEY), Some("RocketMQ"));
        let signed = stamp::verify(&SigningKey::new("12345678"), &decoded, now_millis(), 60_000);
        assert!(matches!(signed, Ok(Some(_))), "{signed:?}");
        let debug = format!("{creds:?}");
        assert!(
            !debug.contains("12345678") && !debug.contains("tok\""),
            "{debug}"
        );
    }

    #[test]
    fn the_hook_signs_as_the_credentials_do() {
        let creds = SessionCredentials::new("RocketMQ", "12345678");
        let hook = AclClientHook::new(creds.clone());
        let request = || {
            let mut r = RemotingCommand::request(310).with_body(&b"hello"[..]);
            r.ext_fields.insert("b", "TopicA");
            r
        };
        let (mut by_hook, mut by_creds) = (request(), request());
        let key = SigningKey::new("12345678");
        for _ in 0..2 {
            // Twice: the hook's key serves request after request.
            hook.before_request("127.0.0.1:10911", &mut by_hook);
            creds.sign(&mut by_creds);
            for r in [&by_hook, &by_creds] {
                let sig = r.ext_fields.get(SIGNATURE).unwrap();
                assert!(signature::verify(
                    "12345678",
                    &r.ext_fields,
                    &r.body,
                    r.version,
                    sig
                ));
                assert!(matches!(
                    stamp::verify(&key, r, now_millis(), 60_000),
                    Ok(Some(_))
                ));
                assert_eq!(r.ext_fields.get(ACCESS_KEY), Some("RocketMQ"));
            }
        }
        assert!(!format!("{hook:?}").contains("12345678"));
    }
}
