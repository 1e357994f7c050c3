//! A headless chromium over WebDriver (Debian's chromium and chromedriver), for the
//! console tests that click through pages in a real browser.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};

/// A chromedriver process, killed on drop.
pub struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn find(program: &str) -> Option<String> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| format!("{dir}/{program}"))
        .find(|p| std::path::Path::new(p).is_file())
}

/// chromedriver on a free port and a session of headless chromium, or `None` (with a
/// message) when either is missing.
pub async fn browser() -> Option<(Driver, Client)> {
    let (Some(driver), Some(chromium)) = (find("chromedriver"), find("chromium")) else {
        eprintln!("SKIPPED: chromium and chromedriver are needed for the console test (apt-get install chromium chromium-driver)");
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let driver = Driver(child);
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        }),
    );
    // chromedriver needs a moment to listen: retry the session for up to 30 s.
    for _ in 0..300 {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(client) => return Some((driver, client)),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    panic!("no WebDriver session from chromedriver on port {port}");
}

/// The text of the first element matching `css`, waiting (10 s at most) for a click's
/// navigation to bring a page that has it.
pub async fn text(client: &Client, css: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = match client.find(Locator::Css(css)).await {
            Ok(element) => element.text().await,
            Err(e) => Err(e),
        };
        match found {
            Ok(text) => return text,
            Err(e) if Instant::now() >= deadline => panic!("{css}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}
