// The official A2A JavaScript SDK's client, run by the app package's
// TestA2AJavaScriptSDK against the A2A face: it resolves the agent card,
// starts a task that answers at once, answers the task's question when
// told, and reads the completed task with its result.
//
//   node client.mjs <base URL> <JSONRPC | HTTP+JSON>   (the token in TASKHOOK_A2A_TOKEN)
//
// It reports on stdout, one JSON object a line: {"event": ..., ...}. It
// waits for a line on stdin before it reads the task's question ("ask"),
// the test having had the executor ask it. Anything that goes wrong is an
// "error" event, and the exit status is 1.

import { createInterface } from 'node:readline';
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';

const report = (event, fields = {}) => process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');

// The lines the test writes on stdin, one at a time.
const stdin = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const told = async want => {
    const { value, done } = await stdin.next();
    if (done || value.trim() !== want) {
        throw new Error(`waited for "${want}" on stdin, got ${done ? 'the end' : JSON.stringify(value)}`);
    }
};

const text = message => (message?.parts ?? []).filter(p => p.content?.$case === 'text').map(p => p.content.value).join('');
const data = part => (part?.content?.$case === 'data' ? part.content.value : null);
const state = task => TaskState[task.status?.state] ?? String(task.status?.state);

const message = (parts, fields = {}) => ({
    messageId: crypto.randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts,
    metadata: undefined, extensions: [], referenceTaskIds: [], ...fields
});
const part = content => ({ content, metadata: undefined, filename: '', mediaType: '' });
const request = (msg, returnImmediately) => ({
    tenant: '', message: msg, metadata: undefined,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately }
});

async function main() {
    const [base, binding] = process.argv.slice(2);
    const token = process.env.TASKHOOK_A2A_TOKEN;
    if (!base || !binding || !token) {
        throw new Error('usage: TASKHOOK_A2A_TOKEN=... node client.mjs <base URL> <JSONRPC | HTTP+JSON>');
    }
    const withToken = (input, init = {}) => {
        const headers = new Headers(init.headers);
        headers.set('Authorization', `Bearer ${token}`);
        return fetch(input, { ...init, headers });
    };
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: withToken }), new RestTransportFactory({ fetchImpl: withToken })],
        preferredTransports: [binding]
    }));
    const client = await factory.createFromUrl(base);
    const card = await client.getAgentCard();
    report('card', {
        name: card.name,
        skills: card.skills.map(s => s.id),
        interfaces: card.supportedInterfaces.map(i => ({ url: i.url, binding: i.protocolBinding })),
        streaming: card.capabilities?.streaming ?? false,
        binding: client.transport.protocolName,
        protocolVersion: client.protocolVersion
    });

    const call = message([part({ $case: 'data', value: { city: 'Oslo' } })], { metadata: { skill: 'weather' } });
    const started = await client.sendMessage(request(call, true));
    if (!started.status) {
        throw new Error(`the call answered a message, not a task: ${JSON.stringify(started)}`);
    }
    report('started', { id: started.id, contextId: started.contextId, state: state(started) });

    await told('ask');
    const waiting = await client.getTask({ tenant: '', id: started.id });
    report('asked', { state: state(waiting), text: text(waiting.status?.message) });

    // The answer, by the option's label; the message returns once the task
    // has ended.
    report('answering');
    const answer = message([part({ $case: 'text', value: 'Celsius' })], { taskId: started.id, contextId: started.contextId });
    const answered = await client.sendMessage(request(answer, false));
    report('answered', { state: answered.status ? state(answered) : null });

    const done = await client.getTask({ tenant: '', id: started.id, historyLength: 10 });
    report('completed', {
        state: state(done),
        artifacts: done.artifacts.map(a => ({ id: a.artifactId, data: a.parts.map(data) })),
        history: done.history.map(m => ({ role: Role[m.role], text: text(m) }))
    });
    report('done');
}

main().then(
    () => process.exit(0),
    err => {
        report('error', { message: String(err?.stack ?? err) });
        process.exit(1);
    }
);
