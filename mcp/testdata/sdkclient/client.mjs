// The official MCP TypeScript SDK's client, run by the mcp package's
// TestTypeScriptSDKClient against the MCP face: it connects over Streamable
// HTTP with a bearer token, declares elicitation, and runs a 2025-11-25 task
// through to its result.
//
//   node client.mjs <endpoint URL>      (the token in TASKHOOK_MCP_TOKEN)
//
// It reports on stdout, one JSON object a line: {"event": ..., ...}. The
// test does the executor's side when it reads "holding" (the task's
// question) and once the answer is recorded (the task's result). Anything
// that goes wrong is an "error" event, and the exit status is 1.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const report = (event, fields = {}) => process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');

async function main() {
    const [endpoint] = process.argv.slice(2);
    const token = process.env.TASKHOOK_MCP_TOKEN;
    if (!endpoint || !token) {
        throw new Error('usage: TASKHOOK_MCP_TOKEN=... node client.mjs <endpoint URL>');
    }
    const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } }
    });
    const client = new Client({ name: 'sdk-test-client', version: '0' }, { capabilities: { elicitation: { form: {} } } });

    // The question the task asks while its result is held: answered with
    // the first option the form offers.
    client.setRequestHandler(ElicitRequestSchema, async request => {
        const params = request.params;
        report('elicited', { params });
        const options = params.requestedSchema?.properties?.optionId?.oneOf ?? [];
        if (options.length === 0) {
            return { action: 'decline' };
        }
        return { action: 'accept', content: { optionId: options[0].const } };
    });

    // What the SDK finds wrong in a message it reads (a notification that
    // does not fit its schema, a response to no request) it reports here.
    const problems = [];
    client.onerror = err => problems.push(String(err?.message ?? err));
    const statuses = [];
    client.setNotificationHandler(TaskStatusNotificationSchema, n => {
        statuses.push({ taskId: n.params.taskId, status: n.params.status });
    });

    await client.connect(transport);
    report('initialized', {
        protocolVersion: transport.protocolVersion ?? null,
        sessionId: transport.sessionId ?? null,
        server: client.getServerVersion(),
        capabilities: client.getServerCapabilities()
    });

    let page = await client.listTools();
    const all = [...page.tools];
    while (page.nextCursor) {
        page = await client.listTools({ cursor: page.nextCursor });
        all.push(...page.tools);
    }
    report('tools', { tools: all.map(t => ({ name: t.name, execution: t.execution ?? null })) });

    // The task-augmented call: the stream's first message is the task, or
    // the error the call was refused with.
    const tasks = client.experimental.tasks;
    for await (const message of tasks.callToolStream({ name: 'devbox', arguments: {} }, CallToolResultSchema, {
        task: { ttl: 60000 }
    })) {
        report('refused', { type: message.type, code: message.error?.code ?? null, message: message.error?.message ?? null });
        break;
    }
    let created;
    for await (const message of tasks.callToolStream({ name: 'devbox', arguments: { repo: 'r' } }, CallToolResultSchema, {
        task: { ttl: 60000 }
    })) {
        if (message.type === 'error') {
            throw message.error;
        }
        if (message.type === 'taskCreated') {
            created = message.task;
            break;
        }
    }
    report('created', { task: created });

    const got = await tasks.getTask(created.taskId);
    report('got', { task: got });

    // tasks/result is held until the task ends; meanwhile the question
    // reaches the elicitation handler above.
    const held = tasks.getTaskResult(created.taskId, CallToolResultSchema);
    report('holding', { taskId: created.taskId });
    const result = await held;
    report('result', { result, statuses });

    const listed = await tasks.listTasks();
    report('listed', { tasks: listed.tasks, nextCursor: listed.nextCursor ?? null });

    try {
        await tasks.cancelTask(created.taskId);
        report('cancel', { code: null });
    } catch (err) {
        report('cancel', { code: err.code ?? null, message: err.message });
    }

    await transport.terminateSession().catch(() => {});
    await client.close();
    report('done', { problems });
}

main().catch(err => {
    report('error', { message: String(err?.stack ?? err) });
    process.exit(1);
});
