// The official Apache RocketMQ 5.x Node.js client (npm `rocketmq-client-nodejs`)
// against a Vostok broker's gRPC endpoint, in the clear (its default):
//
//     NODE_PATH=target/nodeclient/node_modules node grpc_client.js ENDPOINT TOPIC
//
// Sends normal messages with tags and keys, one with a message group and one with a
// delivery time, receives them with a SimpleConsumer (changing one's invisible time
// before acking it with its new handle) and ends with one line `RESULT <json>` that
// tests/tests/grpc_node.rs checks. Every wait is bounded.

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const [endpoints, topic] = process.argv.slice(2);
const WAIT_MS = 60000;

async function main() {
  const producer = new Producer({ endpoints, topic });
  await producer.startup();
  const sent = [];
  for (let i = 0; i < 5; i++) {
    const receipt = await producer.send({
      topic, tag: 'TagN', keys: [`key-${i}`], body: Buffer.from(`node-${i}`),
      properties: new Map().set('index', String(i)),
    });
    sent.push(receipt.messageId);
  }
  sent.push((await producer.send({ topic, tag: 'TagN', messageGroup: 'node-group-1', body: Buffer.from('node-fifo') })).messageId);
  const dueAt = new Date(Date.now() + 2000);
  sent.push((await producer.send({ topic, tag: 'TagN', deliveryTimestamp: dueAt, body: Buffer.from('node-delay') })).messageId);

  const consumer = new SimpleConsumer({
    endpoints, consumerGroup: `GID_${topic}`,
    subscriptions: new Map().set(topic, 'TagN'), awaitDuration: 3000,
  });
  await consumer.startup();
  const got = [];
  let changed = false;
  const deadline = Date.now() + WAIT_MS;
  while (got.length < sent.length && Date.now() < deadline) {
    for (const m of await consumer.receive(16, 15000)) {
      if (!changed) {
        await consumer.changeInvisibleDuration(m, 20000);
        changed = true;
      }
      got.push({
        body: m.body.toString(), tag: m.tag, keys: m.keys, group: m.messageGroup || null,
        id: m.messageId, index: m.properties.get('index') || null,
        receivedAt: Date.now(), dueAt: dueAt.getTime(),
      });
      await consumer.ack(m);
    }
  }
  const again = await consumer.receive(16, 15000);
  await consumer.shutdown();
  await producer.shutdown();
  console.log('RESULT ' + JSON.stringify({ sent, got, again: again.length, changed }));
  // The client's logger may complain once its stream is closed: the result is out.
  process.exit(0);
}

main().catch((e) => {
  console.error('FAILED', e);
  process.exit(1);
});
