//! ACL 2.0 management requests 3001–3010 (docs/security.md#acl-2): users by name,
//! ACLs by subject (`User:<name>`). Bodies are `UserInfo` / `AclInfo` JSON.

use crate::command_header;

command_header! {
    /// AUTH_CREATE_USER, AUTH_UPDATE_USER, AUTH_DELETE_USER, AUTH_GET_USER.
    /// `withPassword` (Vostok): a SUPER user's GET_USER also gets the password, as
    /// `copyUser` needs; Apache brokers ignore it (and always answer with it).
    pub struct UserRequestHeader {
        username: String = "username",
        with_password: Option<bool> = "withPassword",
    }
}

command_header! {
    /// AUTH_LIST_USER; `withPassword` as for GET_USER.
    pub struct ListUsersRequestHeader {
        filter: Option<String> = "filter",
        with_password: Option<bool> = "withPassword",
    }
}

command_header! {
    /// AUTH_CREATE_ACL, AUTH_UPDATE_ACL, AUTH_GET_ACL.
    pub struct AclRequestHeader {
        subject: String = "subject",
    }
}

command_header! {
    /// AUTH_DELETE_ACL: the whole ACL, or one resource's entry of one policy type.
    pub struct DeleteAclRequestHeader {
        subject: String = "subject",
        policy_type: Option<String> = "policyType",
        resource: Option<String> = "resource",
    }
}

command_header! {
    /// AUTH_LIST_ACL.
    pub struct ListAclsRequestHeader {
        subject_filter: Option<String> = "subjectFilter",
        resource_filter: Option<String> = "resourceFilter",
    }
}
