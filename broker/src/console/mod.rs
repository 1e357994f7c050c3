//! The web console (docs/operations.md#console): server-rendered pages on the
//! broker's own HTTP listener (`consoleEnable`, `consolePort`), no script and no
//! external asset. It stands on top, beside the remoting and gRPC front ends: pages
//! read the broker's tables, and forms call the same operations as the admin
//! requests.
//!
//! * [`pages`]: cluster, topics, groups (lag), connected clients.
//! * [`cluster`]: every broker of every cluster, from the name servers, with its role
//!   and disk use, for the cluster page.
//! * [`message`]: search by key, id or time, "where is my message", browse, and the
//!   remove and resend forms.
//! * [`history`]: the last hour of rates and lag, sampled every 10 s, drawn by [`svg`].
//!
//! Changes are POST forms carrying a per-process token (CSRF), and a POST whose
//! `Origin` names another site is refused.

mod cluster;
mod history;
mod html;
mod message;
mod pages;
mod svg;

use std::sync::Arc;

use vostok_observe::http::{BoxFuture, HttpHandler, HttpRequest, HttpResponse};

use crate::state::Broker;
use cluster::Member;
use history::History;

/// The cluster's brokers as the name servers list them, or why they could not.
type ClusterView = Result<Vec<Member>, String>;

/// The console of one broker.
#[derive(Clone)]
pub(crate) struct Console {
    broker: Arc<Broker>,
    history: Arc<History>,
    /// The CSRF token every form carries.
    token: Arc<str>,
}

/// The console's HTTP handler; starts its sampler.
pub(crate) fn handler(broker: &Arc<Broker>) -> Arc<dyn HttpHandler> {
    let history = Arc::new(History::default());
    history::spawn_sampler(broker, history.clone());
    let token: String = (0..4)
        .map(|_| format!("{:016x}", rand::random::<u64>()))
        .collect();
    Arc::new(Console {
        broker: broker.clone(),
        history,
        token: token.into(),
    })
}

impl HttpHandler for Console {
    fn handle(&self, request: HttpRequest) -> BoxFuture<HttpResponse> {
        let console = self.clone();
        Box::pin(async move {
            match request.method.as_str() {
                "GET" | "HEAD" => {
                    // The cluster page asks the name servers and every broker first.
                    let view = match request.path.as_str() {
                        "/" => Some(cluster::members(&console.broker).await),
                        _ => None,
                    };
                    // Pages read consume queues (lag, searches): off the reactor.
                    tokio::task::spawn_blocking(move || console.get(&request, view))
                        .await
                        .unwrap_or_else(|_| HttpResponse::text(500, "page failed\n"))
                }
                "POST" => console.post(&request).await,
                _ => HttpResponse::text(405, "GET or POST\n"),
            }
        })
    }
}

impl Console {
    /// `view`: the cluster's brokers, for the cluster page.
    fn get(&self, r: &HttpRequest, view: Option<ClusterView>) -> HttpResponse {
        let flash = r.param("flash");
        let flash = flash.as_deref();
        let name = r.param("name").unwrap_or_default();
        let body = match r.path.as_str() {
            "/" => ("Cluster".to_owned(), pages::cluster(self, view.as_ref())),
            "/topics" => ("Topics".to_owned(), pages::topics(self)),
            "/topic" => (format!("Topic {name}"), pages::topic(self, &name)),
            "/groups" => ("Groups".to_owned(), pages::groups(self)),
            "/group" => (format!("Group {name}"), pages::group(self, &name)),
            "/clients" => ("Connected clients".to_owned(), pages::clients(self)),
            "/messages" => ("Messages".to_owned(), message::search(self, r)),
            "/browse" => ("Waiting messages".to_owned(), message::browse(self, r)),
            "/favicon.ico" => return HttpResponse::text(404, ""),
            _ => return HttpResponse::text(404, "no such page\n"),
        };
        let (title, content) = body;
        HttpResponse::html(html::page(
            &self.broker.config.broker_name,
            &title,
            flash,
            &content,
        ))
        .with_header("cache-control", "no-store")
    }

    async fn post(&self, r: &HttpRequest) -> HttpResponse {
        if let Err(why) = self.check_post(r) {
            return HttpResponse::text(403, format!("refused: {why}\n"));
        }
        let form: Vec<(String, String)> = r.form();
        let field = |k: &str| {
            form.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_default()
        };
        let (back, outcome) = match r.path.as_str() {
            "/topics/create" => (
                "/topics".to_owned(),
                message::create_topic(self, &field).await,
            ),
            "/topics/delete" => (
                "/topics".to_owned(),
                message::delete_topic(self, &field).await,
            ),
            "/messages/remove" => (field("back"), message::remove(self, &field).await),
            "/messages/resend" => (field("back"), message::resend(self, &field).await),
            _ => return HttpResponse::text(404, "no such action\n"),
        };
        let text = match outcome {
            Ok(done) => done,
            Err(e) => format!("error: {e}"),
        };
        // Back to a page of ours only.
        let back = if back.starts_with('/') && !back.starts_with("//") {
            back
        } else {
            "/".to_owned()
        };
        let sep = if back.contains('?') { '&' } else { '?' };
        HttpResponse::redirect(&format!("{back}{sep}flash={}", html::url(&text)))
    }

    /// A POST must carry the token, and come from a page of this console when the
    /// browser says where it came from.
    fn check_post(&self, r: &HttpRequest) -> Result<(), &'static str> {
        let form = r.form();
        let token = form
            .iter()
            .find(|(k, _)| k == "csrf")
            .map(|(_, v)| v.as_str());
        if token != Some(&*self.token) {
            return Err("missing or wrong form token (reload the page)");
        }
        if let (Some(origin), Some(host)) = (r.header("origin"), r.header("host")) {
            let same = origin
                .split_once("://")
                .is_some_and(|(_, rest)| rest == host);
            if !same && origin != "null" {
                return Err("cross-site request");
            }
        }
        Ok(())
    }
}
