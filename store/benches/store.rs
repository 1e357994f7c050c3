//! Criterion benches of the store: appends of 1 KiB messages (ASYNC_FLUSH from 1 and
//! 8 tasks, SYNC_FLUSH with 64 concurrent writers), sequential reads through the
//! consume queue, and the raw write primitives the commitlog could use (mmap copy vs
//! positioned write). `store_bench` (src/bin) reports medians of longer runs.

use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vostok_remoting::protocol::message::property::{
    push_pair, TAGS, UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
};
use vostok_store::{FlushDiskType, MessageInner, MessageStore, StoreConfig};

const BATCH: u64 = 2000;

fn message(n: u64, body: &Bytes) -> MessageInner {
    let mut properties = String::new();
    push_pair(&mut properties, TAGS, "TagA");
    push_pair(
        &mut properties,
        UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        &format!("{n:032X}"),
    );
    MessageInner {
        topic: "BenchTopic".to_owned(),
        queue_id: (n % 8) as i32,
        flag: 0,
        body: body.clone(),
        properties,
        tags_code: 0,
        sys_flag: 0,
        born_timestamp: 0,
        born_host: SocketAddr::from(([127, 0, 0, 1], 5000)),
        store_host: SocketAddr::from(([127, 0, 0, 1], 10911)),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

fn open(dir: &std::path::Path, flush: FlushDiskType) -> Arc<MessageStore> {
    MessageStore::open(StoreConfig {
        store_path_root_dir: dir.to_path_buf(),
        flush_disk_type: flush,
        mapped_file_size_commit_log: 256 << 20,
        ..Default::default()
    })
    .expect("open store")
}

async fn append(store: &Arc<MessageStore>, tasks: u64, total: u64, body: &Bytes) {
    let mut handles = Vec::new();
    for t in 0..tasks {
        let store = Arc::clone(store);
        let body = body.clone();
        handles.push(tokio::spawn(async move {
            let mut n = t;
            while n < total {
                let r = store.put_message(message(n, &body)).await;
                assert!(r.is_ok(), "{:?}", r.status);
                n += tasks;
            }
        }));
    }
    for h in handles {
        h.await.expect("task");
    }
}

fn appends(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let body = Bytes::from(vec![b'x'; 1024]);
    let mut g = c.benchmark_group("append_1KiB");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(BATCH));
    for (name, flush, tasks) in [
        ("async_flush_1_task", FlushDiskType::AsyncFlush, 1),
        ("async_flush_8_tasks", FlushDiskType::AsyncFlush, 8),
        ("sync_flush_64_writers", FlushDiskType::SyncFlush, 64),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = open(dir.path(), flush);
        g.bench_function(name, |b| {
            b.iter(|| rt.block_on(append(&store, tasks, BATCH, &body)))
        });
        store.shutdown();
    }
    g.finish();
}

fn reads(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = open(dir.path(), FlushDiskType::AsyncFlush);
    let body = Bytes::from(vec![b'x'; 1024]);
    rt.block_on(append(&store, 1, 8 * 10_000, &body));
    assert!(store.wait_for_dispatch(store.max_phy_offset(), Duration::from_secs(60)));
    let mut g = c.benchmark_group("read_consume_queue");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("sequential_pulls_of_32", |b| {
        b.iter(|| {
            let mut offset = 0;
            let mut n = 0;
            while n < 10_000 {
                let r = store.get_message("BenchTopic", 0, offset, 32, 0, None);
                n += r.messages.len();
                offset = r.next_begin_offset;
            }
        })
    });
    g.finish();
    store.shutdown();
}

/// The two ways to put record bytes into a commitlog file.
fn write_primitives(c: &mut Criterion) {
    const FILE: usize = 64 << 20;
    let record = vec![b'r'; 1100];
    let mut g = c.benchmark_group("write_primitive_1100B");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(1000));
    let dir = tempfile::tempdir().expect("temp dir");

    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.path().join("mmap"))
        .expect("file");
    file.set_len(FILE as u64).expect("size");
    // SAFETY: the bench owns the file; nothing else maps or truncates it.
    let mut map = unsafe { memmap2::MmapMut::map_mut(&file) }.expect("map");
    let mut pos = 0;
    g.bench_function("mmap_copy", |b| {
        b.iter(|| {
            for _ in 0..1000 {
                if pos + record.len() > FILE {
                    pos = 0;
                }
                map[pos..pos + record.len()].copy_from_slice(&record);
                pos += record.len();
            }
        })
    });

    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.path().join("pwrite"))
        .expect("file");
    file.set_len(FILE as u64).expect("size");
    let mut pos = 0u64;
    g.bench_function("pwrite", |b| {
        b.iter(|| {
            for _ in 0..1000 {
                if pos as usize + record.len() > FILE {
                    pos = 0;
                }
                file.write_all_at(&record, pos).expect("pwrite");
                pos += record.len() as u64;
            }
        })
    });
    g.finish();
}

criterion_group!(benches, appends, reads, write_primitives);
criterion_main!(benches);
