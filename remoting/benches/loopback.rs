//! Request/response throughput over loopback: one client connection, a trivial
//! processor, with 1 and with 256 requests in flight. Small requests (a 64-byte body).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tokio::net::TcpListener;
use vostok_remoting::{
    BoxFuture, Channel, ClientConfig, RemotingClient, RemotingCommand, RemotingServer,
    RequestProcessor, ServerConfig,
};

struct Echo;

impl RequestProcessor for Echo {
    fn process<'a>(
        &'a self,
        _: &'a Channel,
        request: RemotingCommand,
    ) -> BoxFuture<'a, Option<RemotingCommand>> {
        Box::pin(async move { Some(RemotingCommand::success().with_body(request.body)) })
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (server, client, addr) = runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = RemotingServer::start(
            listener,
            Arc::new(Echo),
            ServerConfig::default(),
            Vec::new(),
        );
        let client = Arc::new(RemotingClient::new(ClientConfig::default(), None));
        let addr = server.local_addr().to_string();
        client.channel(&addr).await.unwrap();
        (server, client, addr)
    });
    let body = Bytes::from(vec![1u8; 64]);
    let mut group = c.benchmark_group("loopback");
    for in_flight in [1usize, 256] {
        group.throughput(Throughput::Elements(1));
        group.bench_function(format!("in_flight_{in_flight}"), |b| {
            b.iter_custom(|iters| {
                let client = client.clone();
                let addr = addr.clone();
                let body = body.clone();
                runtime.block_on(async move {
                    let start = Instant::now();
                    let per_task = (iters as usize).div_ceil(in_flight);
                    let mut tasks = Vec::with_capacity(in_flight);
                    for _ in 0..in_flight {
                        let client = client.clone();
                        let addr = addr.clone();
                        let body = body.clone();
                        tasks.push(tokio::spawn(async move {
                            for _ in 0..per_task {
                                let request = RemotingCommand::request(1).with_body(body.clone());
                                client
                                    .invoke_sync(&addr, request, Duration::from_secs(10))
                                    .await
                                    .unwrap();
                            }
                        }));
                    }
                    for task in tasks {
                        task.await.unwrap();
                    }
                    start.elapsed()
                })
            })
        });
    }
    group.finish();
    runtime.block_on(server.shutdown());
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
