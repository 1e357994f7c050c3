//! The web console (docs/operations.md#console): server-rendered pages on the
//! broker's own HTTP listener (`consoleEnable`, `consolePort`), no script and no
//! external asset. It stands on top, beside the remoting and gRPC front ends: pages
//! read the broker's tables (and ask the other brokers for theirs), and forms call the
//! same operations as the admin requests.
//!
//! * [`pages`]: cluster, topics, groups (lag), connected clients.
//! * [`cluster`]: every broker of every cluster, from the name servers, with its role
//!   and disk use, for the cluster page; [`tier`]: this broker's tiered storage there.
//! * [`remote`]: the other broker groups' topics, groups, clients and messages, asked
//!   as the signed-in account, for the cluster-wide pages; [`others`] draws their rows.
//! * [`message`]: search by key, id or time, "where is my message", browse, and the
//!   remove and resend forms; [`detail`]: one message's body, properties, trace
//!   ([`trace`]) and "resend to group X".
//! * [`history`]: the last hour of rates and lag, sampled every 10 s, drawn by [`svg`].
//!
//! * [`host`]: requests addressed to another name (DNS rebinding) or sent by another
//!   site's page are refused; [`session`]: logins with an ACL account when ACL is on;
//!   [`viewer`]: what the viewer may see and do, as the broker's guard decides.
//!
//! Changes are POST forms carrying a per-process token (CSRF). With ACL on, every page
//! and form needs a signed-in account with the rights its own request would need.
//! What loses messages asks first ([`confirm`]). With ACL off, a console listening off
//! loopback is read-only unless `consoleAdminEnable=true`.

mod broker_config;
mod cluster;
mod confirm;
mod detail;
mod dlq;
mod groups_admin;
mod history;
mod host;
mod html;
mod message;
mod offsets;
mod others;
mod pages;
mod producers;
mod remote;
mod session;
mod svg;
mod test_send;
mod tier;
mod topic_admin;
mod trace;
mod viewer;

use std::net::SocketAddr;
use std::sync::Arc;

use tracing::{info, warn};
use vostok_observe::http::{BoxFuture, HttpHandler, HttpRequest, HttpResponse};

use crate::state::Broker;
use cluster::Member;
use history::History;
use host::Hosts;
use session::Sessions;
use viewer::Viewer;

/// The cluster's brokers as the name servers list them, or why they could not.
type ClusterView = Result<Vec<Member>, String>;

/// The console of one broker.
#[derive(Clone)]
pub(crate) struct Console {
    broker: Arc<Broker>,
    history: Arc<History>,
    /// The CSRF token every form carries.
    token: Arc<str>,
    hosts: Arc<Hosts>,
    sessions: Arc<Sessions>,
    /// Why every change is refused, when the console is read-only.
    read_only: Option<Arc<str>>,
    /// Asks the other brokers for the cluster-wide pages.
    remote: Arc<remote::Remote>,
}

/// The console's HTTP handler; starts its sampler. `bound`: the address it listens
/// on. Off loopback with ACL off, anyone who reaches it could change things: it is
/// read-only unless `consoleAdminEnable=true`.
pub(crate) fn handler(broker: &Arc<Broker>, bound: Option<SocketAddr>) -> Arc<dyn HttpHandler> {
    let history = Arc::new(History::default());
    history::spawn_sampler(broker, history.clone());
    let token: String = (0..4)
        .map(|_| format!("{:016x}", rand::random::<u64>()))
        .collect();
    let read_only = bound
        .filter(|a| !a.ip().is_loopback())
        .filter(|_| broker.guard.is_none() && !broker.config.ops.console_admin_enable)
        .map(|a| {
            warn!(addr = %a, "the console listens off loopback with ACL off: read-only (consoleAdminEnable=true allows changes)");
            format!("this console listens on {a}, not on loopback, and ACL is off, so it is read-only; set consoleAdminEnable=true or aclEnable=true to change things from it").into()
        });
    Arc::new(Console {
        broker: broker.clone(),
        history,
        token: token.into(),
        hosts: Arc::new(Hosts::new(&broker.config.ops.console_allowed_hosts)),
        sessions: Arc::new(Sessions::default()),
        read_only,
        remote: Arc::new(remote::Remote::new(broker)),
    })
}

impl HttpHandler for Console {
    fn handle(&self, request: HttpRequest) -> BoxFuture<HttpResponse> {
        let console = self.clone();
        Box::pin(async move {
            if let Some(why) = console.hosts.refusal(&request) {
                return HttpResponse::text(403, format!("refused: {why}\n"));
            }
            let method = request.method.as_str();
            match (method, request.path.as_str()) {
                ("GET" | "HEAD", "/login") => return console.login_page(&request, None),
                ("POST", "/login") => return console.login(&request),
                ("POST", "/logout") => return console.logout(&request),
                _ => {}
            }
            let Some(viewer) = console.viewer(&request) else {
                return match method {
                    "GET" | "HEAD" => {
                        let mut next = request.path.clone();
                        if !request.query.is_empty() {
                            next = format!("{next}?{}", request.query);
                        }
                        HttpResponse::redirect(&format!("/login?next={}", html::url(&next)))
                    }
                    _ => HttpResponse::text(403, "refused: sign in first\n"),
                };
            };
            match method {
                "GET" | "HEAD" => {
                    if let Some((code, access)) = viewer::page_needs(&request) {
                        if let Err(denied) = viewer.check(code, access) {
                            return console.refused_page(&viewer, &denied.reason);
                        }
                    }
                    // The cluster-wide pages ask the name servers and the other brokers first.
                    let view = remote::fetch(&console, &request, &viewer).await;
                    // Pages read consume queues (lag, searches): off the reactor.
                    tokio::task::spawn_blocking(move || console.get(&request, &viewer, view))
                        .await
                        .unwrap_or_else(|_| HttpResponse::text(500, "page failed\n"))
                }
                "POST" => console.post(&request, &viewer).await,
                _ => HttpResponse::text(405, "GET or POST\n"),
            }
        })
    }
}

impl Console {
    /// The viewer of `r`: anyone with ACL off; with ACL on, the account of a live
    /// session, or `None`.
    fn viewer(&self, r: &HttpRequest) -> Option<Viewer> {
        let session = match &self.broker.guard {
            None => None,
            Some(guard) => Some(self.sessions.of(guard, r)?),
        };
        Some(
            Viewer::new(self.broker.clone(), r.peer.ip(), session)
                .read_only(self.read_only.is_some()),
        )
    }

    /// A whole page: the frame around `content`.
    fn frame(
        &self,
        viewer: Option<&Viewer>,
        title: &str,
        flash: Option<&str>,
        content: &str,
    ) -> String {
        html::page(
            &self.broker.config.broker_name,
            title,
            flash,
            viewer.and_then(Viewer::account).map(|a| (a, &*self.token)),
            content,
        )
    }

    /// The page of a refused read: 403, with the guard's reason.
    fn refused_page(&self, viewer: &Viewer, reason: &str) -> HttpResponse {
        let body = format!("<p class=\"warn\" id=\"refused\">{}</p>", html::esc(reason));
        let mut page = HttpResponse::html(self.frame(Some(viewer), "Refused", None, &body));
        page.status = 403;
        page.with_header("cache-control", "no-store")
    }

    /// `/login`: the form (with ACL off there is nothing to sign in to).
    fn login_page(&self, r: &HttpRequest, error: Option<&str>) -> HttpResponse {
        if self.broker.guard.is_none() {
            return HttpResponse::redirect("/");
        }
        let next = r.param("next").unwrap_or_default();
        let body = html::login_form(&self.token, &next, error);
        let mut page = HttpResponse::html(self.frame(None, "Sign in", None, &body));
        if error.is_some() {
            page.status = 403;
        }
        page.with_header("cache-control", "no-store")
    }

    /// POST `/login`: a session for the account, when its secret is right.
    fn login(&self, r: &HttpRequest) -> HttpResponse {
        let Some(guard) = &self.broker.guard else {
            return HttpResponse::redirect("/");
        };
        let form = r.form();
        let field = |k: &str| {
            form.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .unwrap_or("")
        };
        if field("csrf") != &*self.token {
            return HttpResponse::text(
                403,
                "refused: missing or wrong form token (reload the page)\n",
            );
        }
        let (access_key, next) = (field("accessKey").trim(), field("next"));
        match self
            .sessions
            .login(guard, r.peer.ip(), access_key, field("secretKey"))
        {
            Ok((token, _)) => {
                info!(peer = %r.peer, account = access_key, "console sign-in");
                HttpResponse::redirect(&local_path(next))
                    .with_header("set-cookie", &session::set_cookie(&token))
            }
            Err(denied) => {
                info!(peer = %r.peer, account = access_key, reason = %denied.reason, "console sign-in refused");
                // The same words whatever was wrong: no hint whether the key exists.
                let retry = HttpRequest {
                    query: format!("next={}", html::url(next)),
                    ..r.clone()
                };
                self.login_page(&retry, Some("wrong access key or secret key"))
            }
        }
    }

    /// POST `/logout`: ends the session.
    fn logout(&self, r: &HttpRequest) -> HttpResponse {
        let form = r.form();
        let token = form
            .iter()
            .find(|(k, _)| k == "csrf")
            .map(|(_, v)| v.as_str());
        if token != Some(&*self.token) {
            return HttpResponse::text(
                403,
                "refused: missing or wrong form token (reload the page)\n",
            );
        }
        self.sessions.logout(r);
        HttpResponse::redirect(if self.broker.guard.is_some() {
            "/login"
        } else {
            "/"
        })
        .with_header("set-cookie", &session::clear_cookie())
    }

    /// `view`: what the page asked the name servers and the other brokers.
    fn get(&self, r: &HttpRequest, viewer: &Viewer, view: remote::Fetched) -> HttpResponse {
        let flash = r.param("flash");
        let flash = flash.as_deref();
        let name = r.param("name").unwrap_or_default();
        let namespace = r.param("namespace").filter(|ns| !ns.trim().is_empty());
        let namespace = namespace.as_deref().map(str::trim);
        let admin = viewer.is_admin();
        let body = match r.path.as_str() {
            "/" => ("Cluster".to_owned(), pages::cluster(self, view.cluster())),
            "/topics" => (
                "Topics".to_owned(),
                pages::topics(self, viewer, namespace, view.others()),
            ),
            "/topic" => (format!("Topic {name}"), pages::topic(self, viewer, &name)),
            "/groups" => (
                "Groups".to_owned(),
                pages::groups(self, viewer, namespace, view.others()),
            ),
            "/group" => (format!("Group {name}"), pages::group(self, &name)),
            "/clients" => (
                "Connected clients".to_owned(),
                pages::clients(self, view.others()),
            ),
            "/messages" => (
                "Messages".to_owned(),
                message::search(self, r, admin) + &others::other_messages(view.others()),
            ),
            "/message" => ("Message".to_owned(), detail::page(self, r, viewer, admin)),
            "/browse" => (
                "Waiting messages".to_owned(),
                message::browse(self, r, admin),
            ),
            "/subscription" => (
                "Group settings".to_owned(),
                groups_admin::page(self, r, admin),
            ),
            "/topic/edit" => (
                format!("Change topic {name}"),
                topic_admin::page(self, r, admin),
            ),
            "/send" => (
                "Send a test message".to_owned(),
                test_send::page(
                    self,
                    r,
                    viewer.may_send(&r.param("topic").unwrap_or_default()),
                ),
            ),
            "/dlq" => (
                format!("Dead letters of {}", r.param("group").unwrap_or_default()),
                dlq::page(self, r, admin),
            ),
            "/dlq/export" => return dlq::export(self, r),
            "/config" => (
                "Broker configuration".to_owned(),
                broker_config::page(self, r, admin),
            ),
            "/producers" => ("Producers".to_owned(), producers::page(self, r)),
            "/offsets" => ("Reset offsets".to_owned(), offsets::page(self, r, admin)),
            "/favicon.ico" => return HttpResponse::text(404, ""),
            _ => return HttpResponse::text(404, "no such page\n"),
        };
        let (title, mut content) = body;
        if let Some(why) = &self.read_only {
            content = format!(
                "<p class=\"note\" id=\"read-only\">Read-only: {}.</p>{content}",
                html::esc(why)
            );
        }
        HttpResponse::html(self.frame(Some(viewer), &title, flash, &content))
            .with_header("cache-control", "no-store")
    }

    async fn post(&self, r: &HttpRequest, viewer: &Viewer) -> HttpResponse {
        if let Some(why) = &self.read_only {
            info!(peer = %r.peer, action = %r.path, "console action refused: read-only");
            return HttpResponse::text(403, format!("refused: {why}\n"));
        }
        if let Err(why) = self.check_post(r) {
            return HttpResponse::text(403, format!("refused: {why}\n"));
        }
        let Some(code) = viewer::action_code(&r.path) else {
            return HttpResponse::text(404, "no such action\n");
        };
        let by = crate::ops::Operator::Console(viewer.account().unwrap_or("").to_owned());
        let form: Vec<(String, String)> = r.form();
        let field = |k: &str| {
            form.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_default()
        };
        let topic = field("topic");
        if let Err(denied) = viewer.check(code, viewer::action_access(&r.path, &topic)) {
            return HttpResponse::text(403, format!("refused: {}\n", denied.reason));
        }
        if confirm::needed(self, &r.path, &form) && !confirm::confirmed(&form) {
            let (title, body) = confirm::page(self, &r.path, &form);
            return HttpResponse::html(self.frame(Some(viewer), &title, None, &body))
                .with_header("cache-control", "no-store");
        }
        let (back, outcome) = match r.path.as_str() {
            "/topics/create" => (
                "/topics".to_owned(),
                message::create_topic(self, &field).await,
            ),
            "/topics/delete" => (
                "/topics".to_owned(),
                message::delete_topic(self, &field).await,
            ),
            "/messages/remove" => (field("back"), message::remove(self, &by, &field).await),
            "/messages/resend" => (field("back"), message::resend(self, &by, &field).await),
            "/messages/consume" => (field("back"), detail::consume(self, &field).await),
            "/groups/update" => (
                groups_admin::update_back(&field),
                groups_admin::update(self, &field).await,
            ),
            "/groups/delete" => (
                "/groups".to_owned(),
                groups_admin::delete(self, &field).await,
            ),
            "/topics/update" => (
                topic_admin::back(&field),
                topic_admin::update(self, &field).await,
            ),
            "/messages/send" => (
                test_send::back(&field),
                test_send::send(self, &field, r.peer).await,
            ),
            "/dlq/resend-all" => (dlq::back(&field), dlq::resend_all(self, &by, &field).await),
            "/config/update" => ("/config".to_owned(), broker_config::update(self, &form)),
            "/offsets/reset" => (offsets::back(&field), offsets::reset(self, &field)),
            _ => return HttpResponse::text(404, "no such action\n"),
        };
        info!(peer = %r.peer, account = viewer.account().unwrap_or("-"), action = %r.path, "console action");
        let text = match outcome {
            Ok(done) => done,
            Err(e) => format!("error: {e}"),
        };
        let back = local_path(&back);
        let sep = if back.contains('?') { '&' } else { '?' };
        HttpResponse::redirect(&format!("{back}{sep}flash={}", html::url(&text)))
    }

    /// A POST must carry the token (its origin was checked with its host).
    fn check_post(&self, r: &HttpRequest) -> Result<(), &'static str> {
        let form = r.form();
        let token = form
            .iter()
            .find(|(k, _)| k == "csrf")
            .map(|(_, v)| v.as_str());
        if token != Some(&*self.token) {
            return Err("missing or wrong form token (reload the page)");
        }
        Ok(())
    }
}

/// `path` when it is a page of ours, else `/`: redirects never leave the console.
fn local_path(path: &str) -> String {
    if path.starts_with('/') && !path.starts_with("//") && !path.starts_with("/\\") {
        path.to_owned()
    } else {
        "/".to_owned()
    }
}
