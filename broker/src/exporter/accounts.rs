//! Scrapes of /metrics that sign in with an ACL account (docs/operations.md#metrics):
//! the broker's guard checks the password as it checks a signed request; an account
//! confined to a namespace sees only its namespace's topics and groups, any other
//! account what a scrape without credentials sees.

use std::net::IpAddr;
use std::sync::Arc;

use vostok_auth::{Access, MacProof};
use vostok_observe::scrape_scope::{Scope, ScrapeAccounts};
use vostok_remoting::protocol::request_code;

use crate::state::Broker;

pub(crate) struct BrokerAccounts(pub(crate) Arc<Broker>);

impl ScrapeAccounts for BrokerAccounts {
    fn scope(&self, ip: IpAddr, user: &str, password: &str) -> Scope {
        let Some(guard) = &self.0.guard else {
            return Scope::Unrestricted;
        };
        let content: [u8; 32] = rand::random();
        let mac = MacProof::mac_of(password, &content);
        let proof = MacProof {
            code: request_code::GET_BROKER_RUNTIME_INFO,
            access_key: user,
            content: &content,
            mac: &mac,
        };
        match guard.check(ip, &proof, || Access::Open) {
            Err(denied) => Scope::Refused(denied.reason),
            Ok(principal) => match principal.confinement() {
                Some(confinement) => {
                    let confinement = confinement.clone();
                    Scope::Only(Box::new(move |name| confinement.admits(name)))
                }
                None => Scope::Unrestricted,
            },
        }
    }
}
