//! ACL 2.0 bodies of requests 3001–3010 (docs/security.md#acl-2): `UserInfo` and
//! `AclInfo` JSON, as Apache's `remoting.protocol.body` classes.
//!
//! ```json
//! {"username":"alice","password":"...","userType":"Normal","userStatus":"enable"}
//! {"subject":"User:alice","policies":[{"policyType":"Custom","entries":[
//!   {"resource":"Topic:orders","actions":["Pub","Sub"],"sourceIps":["10.0.0.0/8"],"decision":"Allow"}]}]}
//! ```

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_status: Option<String>,
}

impl UserInfo {
    pub fn is_super(&self) -> bool {
        self.user_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("Super"))
    }

    pub fn is_disabled(&self) -> bool {
        self.user_status
            .as_deref()
            .is_some_and(|s| s.eq_ignore_ascii_case("disable"))
    }

    /// The same user without the password (what GET/LIST answer).
    pub fn without_password(&self) -> UserInfo {
        UserInfo {
            password: None,
            ..self.clone()
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AclInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default)]
    pub policies: Vec<PolicyInfo>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_type: Option<String>,
    #[serde(default)]
    pub entries: Vec<PolicyEntryInfo>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEntryInfo {
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub actions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(default)]
    pub decision: String,
}
