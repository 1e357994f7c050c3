// The official Apache RocketMQ 5.x Node.js client (npm `rocketmq-client-nodejs`)
// against a Vostok broker's gRPC endpoint, in the clear (its default):
//
//     NODE_PATH=target/nodeclient/node_modules node grpc_client.js SCENARIO ENDPOINT TOPIC [ARG...]
//
// Each scenario ends with one line `RESULT <json>` that tests/tests/grpc_node.rs
// checks. Every wait is bounded.

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const [scenario, endpoints, topic, ...args] = process.argv.slice(2);
const WAIT_MS = 60000;

// Normal messages with tags and keys, one with a message group and one with a delivery
// time, received with a SimpleConsumer (changing one's invisible time before acking it
// with its new handle).
async function sendReceive() {
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
  return { sent, got, again: again.length, changed };
}

// FIFO: PER_GROUP messages in each message group named (`GROUP,...`), sent round robin
// over the groups, received by a SimpleConsumer of GROUP_ID (an orderly group) that
// acks each message once received. Reports the messages in the order they came, each
// with the queue its receipt handle names (field 6, docs/pop.md#extrainfo).
async function fifo() {
  const [consumerGroup, groupList, perGroup] = args;
  const groups = groupList.split(',');
  const producer = new Producer({ endpoints, topic });
  await producer.startup();
  const sent = [];
  for (let i = 0; i < Number(perGroup); i++) {
    for (const group of groups) {
      const body = `${group}:${i}`;
      await producer.send({ topic, tag: 'TagF', messageGroup: group, body: Buffer.from(body) });
      sent.push({ body, group });
    }
  }
  const consumer = new SimpleConsumer({
    endpoints, consumerGroup, subscriptions: new Map().set(topic, '*'), awaitDuration: 3000,
  });
  await consumer.startup();
  const got = [];
  const deadline = Date.now() + WAIT_MS;
  while (got.length < sent.length && Date.now() < deadline) {
    for (const m of await consumer.receive(16, 15000)) {
      got.push({
        body: m.body.toString(), group: m.messageGroup || null,
        queue: Number(m.receiptHandle.split(' ')[6]),
      });
      await consumer.ack(m);
    }
  }
  await consumer.shutdown();
  await producer.shutdown();
  return { sent, got };
}

async function main() {
  const scenarios = { send_receive: sendReceive, fifo };
  const run = scenarios[scenario];
  if (!run) {
    throw new Error(`unknown scenario ${scenario}`);
  }
  console.log('RESULT ' + JSON.stringify(await run()));
  // The client's logger may complain once its stream is closed: the result is out.
  process.exit(0);
}

main().catch((e) => {
  console.error('FAILED', e);
  process.exit(1);
});
