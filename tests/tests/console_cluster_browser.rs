//! One console for the cluster in a real headless browser: broker A's topics page lists
//! broker B's topic with B's name and address; its link opens B's own console on that
//! topic; with B stopped (SIGSTOP), A's page still opens and B's row says it is
//! unreachable. Real `mqnamesrv` and two `mqbroker` processes. Skipped, saying so,
//! where chromium or chromedriver is not installed.

mod browser;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use fantoccini::Locator;
use vostok_tests::client::TestClient;
use vostok_tests::freeze::{freeze, thaw};
use vostok_tests::{http, Broker, BrokerOptions, Namesrv};

use browser::{browser, text};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_on_another_brokers_row_opens_its_console() {
    let Some((_driver, client)) = browser().await else {
        return;
    };
    let ns = Namesrv::start();
    let options = |name: &str| {
        BrokerOptions {
            namesrv: Some(ns.addr.clone()),
            broker_name: name.to_owned(),
            ..Default::default()
        }
        .set("consoleEnable", true)
    };
    let b_port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let a = Broker::start(options("browser-a"));
    let b = Broker::start(options("browser-b").set("consolePort", b_port));
    let console = a.console_addr.clone().expect("console address printed");
    let c = TestClient::default();
    assert_eq!(c.create_topic(&b.addr, "ClickedTopic", 1).await.code, 0);
    // The name server has both brokers within a moment: wait for B's row over HTTP.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !http::get(&console, "/topics")
        .await
        .body
        .contains("ClickedTopic")
    {
        assert!(Instant::now() < deadline, "B's topic never listed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    client
        .goto(&format!("http://{console}/topics"))
        .await
        .expect("topics page");
    let link = format!("http://127.0.0.1:{b_port}/topic?name=ClickedTopic");
    let row = client
        .find(Locator::XPath(
            "//table[@id='topics']//tr[td/a[text()='ClickedTopic']]",
        ))
        .await
        .expect("B's row")
        .text()
        .await
        .expect("row text");
    assert!(row.contains(&format!("browser-b ({})", b.addr)), "{row}");
    client
        .find(Locator::Css(&format!("a[href='{link}']")))
        .await
        .expect("link to B's console")
        .click()
        .await
        .expect("click");
    assert_eq!(text(&client, "h1").await, "Topic ClickedTopic");
    let url = client.current_url().await.expect("url");
    assert_eq!(url.as_str(), link);
    // B's own console names itself.
    assert!(text(&client, "header strong").await.contains("browser-b"));

    freeze(b.process.pid());
    client
        .goto(&format!("http://{console}/topics"))
        .await
        .expect("topics page with B stopped");
    let why = text(&client, "table#topics .peer-error").await;
    assert!(why.starts_with("unreachable"), "{why}");
    thaw(b.process.pid());
    client.close().await.expect("close the session");
}
