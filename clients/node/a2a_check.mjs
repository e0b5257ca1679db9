// A2A with the official JS SDK (@a2a-js/sdk client, unchanged) against the sandbox: send,
// stream and get. The card must declare streaming; sendMessageStream must yield the task
// (submitted), a working status, the artifact and a final completed status in that order; a
// plain send and getTask must agree; resubscribeTask on the finished task replays its final
// state. With an API key, the same for a streamed execute_action (the key added by the SDK's
// fetchImpl hook): submitted, working, the artifact with a signed result, completed; getTask
// without the key must not find it. Exits 0 only if every step holds.
// usage: node a2a_check.mjs BASE_URL [EMAIL] [API_KEY]
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';

const base = (process.argv[2] ?? '').replace(/\/+$/, '');
const email = process.argv[3] ?? 'a2a-js@example.com';
const apiKey = process.argv[4];
if (!base) {
  console.error('usage: node a2a_check.mjs BASE_URL [EMAIL]');
  process.exit(2);
}

function fail(why) {
  console.log('FAIL:', why);
  process.exit(1);
}

function start() {
  return {
    message: {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'data', value: { task_type: 'start_api_key_signup', email, agent_name: 'a2a-js check' } } }],
    },
  };
}

const stateName = (s) => (typeof s === 'number' ? TaskState[s] : s);

// [kind, detail] of one stream event.
function describe(e) {
  const c = e.payload?.$case;
  if (c === 'task') return ['task', stateName(e.payload.value.status?.state)];
  if (c === 'statusUpdate') return ['status', stateName(e.payload.value.status?.state)];
  if (c === 'artifactUpdate') return ['artifact', e.payload.value.artifact?.artifactId];
  if (c === 'message') return ['message', ''];
  return ['unknown', JSON.stringify(e)];
}

const factory = new ClientFactory();
const client = await factory.createFromUrl(base);
const card = await client.getAgentCard();
console.log('card:', card.name, 'streaming:', card.capabilities?.streaming, 'protocol:', client.protocolVersion);
if (!card.capabilities?.streaming) fail('the card does not declare streaming');

// send
const sent = await client.sendMessage(start());
if (!sent?.id || !sent.status) fail(`send: a task expected, got ${JSON.stringify(sent)}`);
console.log('send:', stateName(sent.status.state), sent.id);
if (stateName(sent.status.state) !== 'TASK_STATE_COMPLETED') fail('send did not complete');

// get
const got = await client.getTask({ id: sent.id });
console.log('get:', stateName(got.status.state));
if (got.id !== sent.id || stateName(got.status.state) !== 'TASK_STATE_COMPLETED') fail('getTask does not show the finished task');

// stream
const events = [];
for await (const e of client.sendMessageStream(start())) events.push(e);
const kinds = events.map(describe);
console.log('stream:', JSON.stringify(kinds));
if (kinds.map(([k]) => k).join(',') !== 'task,status,artifact,status') fail('stream: task, status, artifact, status expected');
if (kinds[0][1] !== 'TASK_STATE_SUBMITTED' || kinds[1][1] !== 'TASK_STATE_WORKING' || kinds[3][1] !== 'TASK_STATE_COMPLETED') {
  fail('stream: submitted, working, completed expected');
}
const part = events[2].payload.value.artifact.parts[0];
const data = part?.content?.$case === 'data' ? part.content.value : undefined;
if (!data?.deviceId) fail(`stream: the artifact has no deviceId: ${JSON.stringify(part)}`);
const streamedId = events[0].payload.value.id;

// resubscribe to the finished task: its final state, replayed
const replay = [];
for await (const e of client.resubscribeTask({ id: streamedId })) replay.push(describe(e));
console.log('resubscribe:', JSON.stringify(replay));
if (!replay.length || replay.at(-1)[1] !== 'TASK_STATE_COMPLETED') fail('resubscribe did not replay the completed task');
const again = await client.getTask({ id: streamedId });
if (stateName(again.status.state) !== 'TASK_STATE_COMPLETED') fail('getTask on the streamed task');
if (apiKey) {
  const keyedFetch = (input, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set('Authorization', `Bearer ${apiKey}`);
    return fetch(input, { ...init, headers });
  };
  const keyed = await new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: keyedFetch })],
    }),
  ).createFromUrl(base);
  const run = {
    message: {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'data', value: {
        task_type: 'execute_action', domain: 'shop.sandbox.test', action: 'search_products',
        params: { query: 'tea' }, idempotency_key: 'a2a-js-execute',
      } } }],
    },
  };
  const executed = [];
  for await (const e of keyed.sendMessageStream(run)) executed.push(e);
  const ekinds = executed.map(describe);
  console.log('execute stream:', JSON.stringify(ekinds));
  if (ekinds.map(([k]) => k).join(',') !== 'task,status,artifact,status' || ekinds[3][1] !== 'TASK_STATE_COMPLETED') {
    fail('execute stream: task, working, artifact, completed expected');
  }
  const epart = executed[2].payload.value.artifact.parts[0];
  const result = epart?.content?.$case === 'data' ? epart.content.value : undefined;
  if (result?.status !== 'completed' || !result?.artifact?.signature) fail(`execute stream: no signed completed result: ${JSON.stringify(epart)}`);
  const executedId = executed[0].payload.value.id;
  let found = true;
  try {
    await client.getTask({ id: executedId });
  } catch (e) {
    found = false;
    console.log('get without key:', e.constructor?.name ?? String(e));
  }
  if (found) fail('getTask without the key found the execute task');
}
console.log('all good');
