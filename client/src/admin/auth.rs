//! ACL 2.0 administration (Java `MQAdminExt.createUser` … `listAcl`, request codes
//! 3001–3010): users and ACL policies of one broker. The broker must run ACL 2.0
//! (`authenticationEnabled`/`authorizationEnabled`) and the caller sign as a SUPER
//! user ([`crate::ClientConfig::credentials`]).

use vostok_remoting::protocol::body::{AclInfo, UserInfo};
use vostok_remoting::protocol::header::{
    AclRequestHeader, DeleteAclRequestHeader, ListAclsRequestHeader, ListUsersRequestHeader,
    UserRequestHeader,
};
use vostok_remoting::protocol::{json, request_code};
use vostok_remoting::RemotingCommand;

use super::AdminClient;
use crate::error::Result;

fn user_header(username: &str) -> UserRequestHeader {
    UserRequestHeader {
        username: username.to_owned(),
        with_password: None,
    }
}

fn acl_header(subject: &str) -> AclRequestHeader {
    AclRequestHeader {
        subject: subject.to_owned(),
    }
}

impl AdminClient {
    /// AUTH_CREATE_USER (`createUser`).
    pub async fn create_user(&self, broker_addr: &str, user: &UserInfo) -> Result<()> {
        let name = user.username.clone().unwrap_or_default();
        let request = RemotingCommand::request_with_header(
            request_code::AUTH_CREATE_USER,
            &user_header(&name),
        )
        .with_body(json::to_vec(user));
        self.call(broker_addr, request).await.map(drop)
    }

    /// AUTH_UPDATE_USER (`updateUser`): the fields given replace the stored ones.
    pub async fn update_user(&self, broker_addr: &str, user: &UserInfo) -> Result<()> {
        let name = user.username.clone().unwrap_or_default();
        let request = RemotingCommand::request_with_header(
            request_code::AUTH_UPDATE_USER,
            &user_header(&name),
        )
        .with_body(json::to_vec(user));
        self.call(broker_addr, request).await.map(drop)
    }

    /// AUTH_DELETE_USER (`deleteUser`), with the user's ACL.
    pub async fn delete_user(&self, broker_addr: &str, username: &str) -> Result<()> {
        let request = RemotingCommand::request_with_header(
            request_code::AUTH_DELETE_USER,
            &user_header(username),
        );
        self.call(broker_addr, request).await.map(drop)
    }

    /// AUTH_GET_USER (`getUser`): `None` when there is no such user.
    pub async fn get_user(&self, broker_addr: &str, username: &str) -> Result<Option<UserInfo>> {
        let request = RemotingCommand::request_with_header(
            request_code::AUTH_GET_USER,
            &user_header(username),
        );
        let response = self.call(broker_addr, request).await?;
        if response.body.is_empty() {
            return Ok(None);
        }
        Ok(Some(json::from_slice("UserInfo", &response.body)?))
    }

    /// AUTH_LIST_USER (`listUser`): users whose name contains `filter`.
    pub async fn list_users(
        &self,
        broker_addr: &str,
        filter: Option<&str>,
    ) -> Result<Vec<UserInfo>> {
        let header = ListUsersRequestHeader {
            filter: filter.map(str::to_owned),
            with_password: None,
        };
        let request = RemotingCommand::request_with_header(request_code::AUTH_LIST_USER, &header);
        let response = self.call(broker_addr, request).await?;
        if response.body.is_empty() {
            return Ok(Vec::new());
        }
        Ok(json::from_slice("UserInfo list", &response.body)?)
    }

    /// AUTH_CREATE_ACL (`createAcl`): adds or replaces the entries of `subject`'s ACL.
    pub async fn create_acl(&self, broker_addr: &str, subject: &str, acl: &AclInfo) -> Result<()> {
        let request = RemotingCommand::request_with_header(
            request_code::AUTH_CREATE_ACL,
            &acl_header(subject),
        )
        .with_body(json::to_vec(acl));
        self.call(broker_addr, request).await.map(drop)
    }

    /// AUTH_UPDATE_ACL (`updateAcl`).
    pub async fn update_acl(&self, broker_addr: &str, subject: &str, acl: &AclInfo) -> Result<()> {
        let request = RemotingCommand::request_with_header(
            request_code::AUTH_UPDATE_ACL,
            &acl_header(subject),
        )
        .with_body(json::to_vec(acl));
        self.call(broker_addr, request).await.map(drop)
    }

    /// AUTH_DELETE_ACL (`deleteAcl`): the whole ACL, or one resource's entry.
    pub async fn delete_acl(
        &self,
        broker_addr: &str,
        subject: &str,
        policy_type: Option<&str>,
        resource: Option<&str>,
    ) -> Result<()> {
        let header = DeleteAclRequestHeader {
            subject: subject.to_owned(),
            policy_type: policy_type.map(str::to_owned),
            resource: resource.map(str::to_owned),
        };
        let request = RemotingCommand::request_with_header(request_code::AUTH_DELETE_ACL, &header);
        self.call(broker_addr, request).await.map(drop)
    }

    /// AUTH_GET_ACL (`getAcl`): `None` when the subject has no ACL.
    pub async fn get_acl(&self, broker_addr: &str, subject: &str) -> Result<Option<AclInfo>> {
        let request =
            RemotingCommand::request_with_header(request_code::AUTH_GET_ACL, &acl_header(subject));
        let response = self.call(broker_addr, request).await?;
        if response.body.is_empty() {
            return Ok(None);
        }
        Ok(Some(json::from_slice("AclInfo", &response.body)?))
    }

    /// AUTH_LIST_ACL (`listAcl`).
    pub async fn list_acls(
        &self,
        broker_addr: &str,
        subject_filter: Option<&str>,
        resource_filter: Option<&str>,
    ) -> Result<Vec<AclInfo>> {
        let header = ListAclsRequestHeader {
            subject_filter: subject_filter.map(str::to_owned),
            resource_filter: resource_filter.map(str::to_owned),
        };
        let request = RemotingCommand::request_with_header(request_code::AUTH_LIST_ACL, &header);
        let response = self.call(broker_addr, request).await?;
        if response.body.is_empty() {
            return Ok(Vec::new());
        }
        Ok(json::from_slice("AclInfo list", &response.body)?)
    }

    /// AUTH_GET_USER with the password (`copyUser`): a Vostok broker answers it to a
    /// SUPER user only, an Apache broker always. `None` when there is no such user.
    pub async fn get_user_with_password(
        &self,
        broker_addr: &str,
        username: &str,
    ) -> Result<Option<UserInfo>> {
        let header = UserRequestHeader {
            username: username.to_owned(),
            with_password: Some(true),
        };
        let request = RemotingCommand::request_with_header(request_code::AUTH_GET_USER, &header);
        let response = self.call(broker_addr, request).await?;
        if response.body.is_empty() {
            return Ok(None);
        }
        Ok(Some(json::from_slice("UserInfo", &response.body)?))
    }

    /// AUTH_LIST_USER with the passwords, as [`Self::get_user_with_password`].
    pub async fn list_users_with_password(&self, broker_addr: &str) -> Result<Vec<UserInfo>> {
        let header = ListUsersRequestHeader {
            filter: None,
            with_password: Some(true),
        };
        let request = RemotingCommand::request_with_header(request_code::AUTH_LIST_USER, &header);
        let response = self.call(broker_addr, request).await?;
        if response.body.is_empty() {
            return Ok(Vec::new());
        }
        Ok(json::from_slice("UserInfo list", &response.body)?)
    }
}
